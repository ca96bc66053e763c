"""A real MCP server whose tools ask the user for input (the official SDK's `MCPServer`).

Run it over stdio (`python mcp_elicit_server.py`). Its tools elicit the 2026-07-28 way:
the `tools/call` answers with an input-required result (the questions and a sealed
`request_state`), and the client calls again with the user's responses. The SDK's
resolvers (`Resolve` + `Elicit`) drive the rounds; nothing waits inside a call.
"""

from __future__ import annotations

import os
from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.server.request_state import RequestStateSecurity
from pydantic import BaseModel, Field

# The SDK seals `request_state` with a key of this process unless given one: a question
# asked before a restart then cannot be answered after it. `ELICIT_STATE_KEY` gives the
# server a stable key, as a deployment whose users answer later needs.
_KEY = os.environ.get("ELICIT_STATE_KEY")
server = MCPServer(
    "durable-tools-elicit-test",
    log_level="WARNING",
    request_state_security=RequestStateSecurity(keys=[_KEY], ttl=3600) if _KEY else None,
)


class Recipient(BaseModel):
    """Whom to greet, and how many times."""

    name: str = Field(description="The name to greet")
    times: int = Field(default=1, description="How many greetings")


def ask_recipient() -> Elicit[Recipient]:
    """Resolver: ask the user whom to greet."""
    return Elicit("Whom should I greet?", Recipient)


@server.tool()
def greet(
    greeting: str,
    who: Annotated[ElicitationResult[Recipient], Resolve(ask_recipient)],
) -> str:
    """Greet someone the user names (asks the user)."""
    if who.action != "accept":
        return f"nobody to greet (the user chose {who.action})"
    return " ".join([f"{greeting} {who.data.name}!"] * who.data.times)


@server.tool()
def ping() -> str:
    """Answer without asking anything."""
    return "pong"


if __name__ == "__main__":
    server.run("stdio")
