"""Define a tool: a plain function, a registry, and a call. No Temporal server needed.

Run it with `python examples/define_a_tool.py`.
"""

import asyncio
import json
from typing import Annotated

from durable_tools import Injected, ToolContext, ToolRegistry
from durable_tools.tools import format_result

registry = ToolRegistry()


@registry.tool(read_only=True, tags=["weather"], examples=[{"city": "Oslo"}])
async def get_weather(
    city: str,
    ctx: ToolContext,
    api_key: Annotated[str, Injected("weather_api_key", secret=True)],
    units: str = "metric",
) -> dict[str, object]:
    """Get the current weather for a city.

    Args:
        city: The city name, e.g. "Oslo".
        units: "metric" or "imperial".
    """
    # A real tool would call an API with `api_key` here, passing ctx.idempotency_key.
    return {"city": city, "temperature": 21, "units": units}


async def main() -> None:
    spec = registry.get("get_weather").spec
    print("schema:", json.dumps(spec.input_schema, sort_keys=True))
    print("retry timeouts:", spec.policy.retry.retry_timeouts)

    context = ToolContext(
        tool_call_id="call_1", tool_name="get_weather", secrets={"weather_api_key": "k"}
    )
    result = await registry.invoke("get_weather", '{"city": "Oslo"}', context)
    outcome = format_result(result, call_id="call_1", tool_name="get_weather")
    print("result:", outcome.content)


if __name__ == "__main__":
    asyncio.run(main())
