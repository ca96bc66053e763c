"""myapp's MCP server: currency conversion at fixed rates, over stdio.

`myapp.tools` starts it as a subprocess and registers its tools as `fx__convert`, ...
Run it alone with `python myapp/mcp_server.py` (it then waits for an MCP client on stdin).
Written with the official MCP SDK (`pip install 'durable-tools[mcp]'`).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("fx", log_level="WARNING")

# Units of each currency one US dollar buys; a real server would ask a rates provider.
RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "NOK": 10.6, "JPY": 151.0}


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def convert(amount_cents: int, from_currency: str, to_currency: str) -> int:
    """Convert an amount between currencies at today's rate, in cents of the target.

    Args:
        amount_cents: The amount, in cents of `from_currency`.
        from_currency: ISO code, e.g. "USD".
        to_currency: ISO code, e.g. "EUR".
    """
    source, target = from_currency.upper(), to_currency.upper()
    for code in (source, target):
        if code not in RATES:
            raise ValueError(f"unknown currency {code!r}; known: {', '.join(sorted(RATES))}")
    return round(amount_cents * RATES[target] / RATES[source])


@server.resource("fx://rates", mime_type="application/json")
def rates() -> dict[str, float]:
    """Today's rates: units of each currency per US dollar."""
    return RATES


@server.prompt()
def explain_fee(amount_cents: int, currency: str) -> str:
    """Ask for a short explanation of a conversion fee."""
    return f"Explain in one sentence why converting {amount_cents} cents of {currency} costs a fee."


if __name__ == "__main__":
    server.run("stdio")
