"""`ToolRegistry.subagent`: a tool that runs a child agent as a child workflow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._names import ToolRegistrationError
from ._registry_stub import StubTool, refusing_handler

__all__ = ["subagent_stub"]

_TASK_SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the sub-agent should do."}},
    "required": ["task"],
    "additionalProperties": False,
}


def subagent_stub(config: Mapping[str, Any] | Any, options: Mapping[str, Any]) -> StubTool:
    """The registration of a sub-agent (see `ToolRegistry.subagent`).

    Raises:
        ToolRegistrationError: no `name=`, or a config without a model.
    """
    name = options.get("name")
    if not name:
        raise ToolRegistrationError("a sub-agent needs name=", rule="empty", tool_name=None)
    dumped = config.model_dump(mode="json") if hasattr(config, "model_dump") else dict(config)
    if "model" not in dumped:
        raise ToolRegistrationError(
            f"sub-agent {name!r}: config needs a model", rule="options", tool_name=name
        )
    source = f"agent:{dumped.get('name', 'agent')}"
    return StubTool(
        name=name,
        handler=refusing_handler(
            f"sub-agent {name!r} runs as a child workflow, not as an activity"
        ),
        input_schema=_TASK_SCHEMA,
        options=dict(options),
        spec_update={"subagent": dumped, "transport": "sub-agent", "source": source},
    )
