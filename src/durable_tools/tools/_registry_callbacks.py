"""`ToolRegistry.callback_tool`: a schema without a worker body; a client runs the tool."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from ._names import ToolRegistrationError
from ._options import ToolOptions
from ._registry_stub import StubTool, refusing_handler
from ._schema import schema_for_model

__all__ = ["callback_stub"]

_WORKER_ONLY = frozenset(
    {
        "policy",
        "start_to_close_timeout",
        "schedule_to_close_timeout",
        "heartbeat_timeout",
        "retry",
        "task_queue",
        "local",
        "max_concurrent",
        "rate_limit",
    }
)
"""Options of a tool's activity, meaningless for a callback tool (a client runs it)."""


def callback_stub(
    name: str,
    *,
    parameters: Mapping[str, Any] | type[BaseModel] | None,
    output: Mapping[str, Any] | type[BaseModel] | None,
    timeout: float | timedelta,
    options: ToolOptions,
) -> StubTool:
    """The registration of a callback tool (see `ToolRegistry.callback_tool`).

    Raises:
        ToolRegistrationError: a worker-only option, or a parameters model without a schema.
    """
    worker_only = sorted(set(options) & _WORKER_ONLY)
    if worker_only:
        raise ToolRegistrationError(
            f"callback tool {name!r}: option(s) {', '.join(worker_only)} shape a worker "
            "activity, but a client runs this tool; drop them (timeout= bounds the wait)",
            rule="options",
            tool_name=name,
        )
    if isinstance(parameters, type) and issubclass(parameters, BaseModel):
        schema = schema_for_model(parameters, tool_name=name, mode="validation")
    else:
        schema = dict(parameters or {"type": "object", "properties": {}})
    given: ToolOptions = {"source": f"callback:{name}", **options}
    given["name"] = name
    given["output_schema"] = output
    given["start_to_close_timeout"] = timeout
    return StubTool(
        name=name,
        handler=refusing_handler(f"callback tool {name!r} is run by a client, not a worker"),
        input_schema=schema,
        options=dict(given),
        spec_update={"callback": True, "transport": "callback"},
    )
