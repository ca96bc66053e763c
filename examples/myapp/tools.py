"""myapp's tools: the registry a worker serves.

    cd examples && durable-tools worker --tools myapp.tools

Three kinds of tools in one registry, each an activity of its own:

- Python functions (`get_balance`, `list_transactions`, `pay`, `list_my_repositories`);
- the tools of an MCP server this module starts (`myapp/mcp_server.py`: `fx__convert`);
- one tool per operation of an OpenAPI document (`myapp/openapi.json`: `billing_get_invoice`,
  ...). Its requests go to `MYAPP_BILLING_URL` when set, else to the document's server,
  with the worker secret `billing_token` (`DURABLE_TOOLS_SECRET_BILLING_TOKEN`) as bearer.

`pay` and `billing_refund_invoice` wait for a person's approval. `list_my_repositories`
needs the run's user's GitHub grant: run the worker with `--oauth-providers
myapp/providers.toml` for it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx

from durable_tools import OAuthRequirement, ToolContext, ToolRegistry
from durable_tools.sources import BearerSecret, McpStdio, attach_mcp_sync, attach_openapi

HERE = Path(__file__).resolve().parent

# --8<-- [start:python-tools]
registry = ToolRegistry()


@registry.tool(read_only=True)
def get_balance(account: str) -> int:
    """Balance of an account, in cents."""
    return 12_500


@registry.tool(read_only=True)
def list_transactions(account: str, limit: int = 5) -> list[dict[str, object]]:
    """The latest transactions of an account, newest first.

    Args:
        account: The account id, e.g. "acc-1".
        limit: How many to return, at most 20.
    """
    latest = [
        {"id": "t-3", "amount_cents": -1_200, "what": "coffee beans"},
        {"id": "t-2", "amount_cents": 50_000, "what": "salary"},
        {"id": "t-1", "amount_cents": -36_300, "what": "rent"},
    ]
    return latest[: max(0, min(limit, 20))]


@registry.tool(approval=True, idempotent=True)
def pay(account: str, amount_cents: int, ctx: ToolContext) -> str:
    """Pay from an account. A person approves each payment."""
    # ctx.idempotency_key is the same on every retry: pass it to the payment API.
    return f"paid {amount_cents} from {account} (key {ctx.idempotency_key})"


# --8<-- [end:python-tools]


@registry.tool(read_only=True, oauth=OAuthRequirement(provider="github", scopes=("repo",)))
async def list_my_repositories(ctx: ToolContext) -> list[str]:
    """The GitHub repositories of the user the run acts for."""
    # The run waits for the user to authorize first; the token never enters the history.
    async with httpx.AsyncClient(timeout=20) as http:
        response = await http.get(
            "https://api.github.com/user/repos",
            headers={"Authorization": f"Bearer {ctx.access_token}"},
        )
    response.raise_for_status()
    return [repository["full_name"] for repository in response.json()]


# --8<-- [start:sources]
# An MCP server's tools (fx__convert): the worker starts the server as a subprocess.
attach_mcp_sync(registry, McpStdio(sys.executable, (str(HERE / "mcp_server.py"),), name="fx"))

# One tool per operation of an OpenAPI document; GET is read-only, POST needs approval here.
attach_openapi(
    registry,
    HERE / "openapi.json",
    base_url=os.environ.get("MYAPP_BILLING_URL"),  # None: the document's server
    prefix="billing",
    auth=BearerSecret("billing_token"),  # a worker secret: DURABLE_TOOLS_SECRET_BILLING_TOKEN
    overrides={"refundInvoice": {"approval": True}},
)
# --8<-- [end:sources]
