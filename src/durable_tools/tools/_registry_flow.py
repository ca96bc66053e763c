"""`ToolRegistry.flow`: a graph of calls of registered tools, offered as one tool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from .._durations import MAX_DURATION_SECONDS
from ._context import Identity
from ._flow_plan import plan_flow
from ._names import ToolRegistrationError
from ._registered import RegisteredTool
from ._registry_stub import StubTool, refuse_options, refusing_handler
from ._spec import RetrySpec

__all__ = ["flow_stub"]

_NODES_OWN = "each node runs under its own tool's policy (or its FlowNode policy=)"
_REFUSED = MappingProxyType(
    {
        "start_to_close_timeout": "timeout= bounds the whole flow",
        "schedule_to_close_timeout": "timeout= bounds the whole flow",
        "retry": (
            f"a flow call runs its graph once and {_NODES_OWN}: running it again would repeat "
            "the nodes that had completed"
        ),
        "heartbeat_timeout": f"a flow is a child workflow, which does not heartbeat; {_NODES_OWN}",
        "task_queue": f"the flow runs on the agent run's task queue; {_NODES_OWN}",
        "local": f"a flow is a child workflow, never a local activity; {_NODES_OWN}",
        "max_concurrent": f"a flow is a child workflow, not a tool activity; {_NODES_OWN}",
        "rate_limit": f"a flow is a child workflow, not a tool activity; {_NODES_OWN}",
    }
)
"""Execution options a flow call cannot honour: option -> why. (`max_calls_per_run`
counts flow calls like any tool's.)"""


def flow_stub(
    name: str,
    description: str,
    *,
    tools: Mapping[str, RegisteredTool],
    nodes: Mapping[str, Any],
    edges: Iterable[tuple[str, str]],
    output: str | Mapping[str, str] | None,
    input_schema: Mapping[str, Any] | None,
    timeout: float | timedelta,
    node_output_limit_bytes: int,
    options: Mapping[str, Any],
) -> StubTool:
    """The registration of a flow over `tools` (see `ToolRegistry.flow`).

    Raises:
        ToolRegistrationError: `rule="flow"` for a flow that does not validate.
    """

    given = sorted({"name", "description"} & options.keys())
    if given:  # as when they were passed on to `register_schema` beside the positional ones
        raise TypeError(f"flow() got multiple values for keyword argument {given[0]!r}")
    refuse_options("flow", name, options, _REFUSED)
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if not 0 < seconds <= MAX_DURATION_SECONDS or node_output_limit_bytes < 256:
        raise ToolRegistrationError(
            f"flow {name!r}: timeout must be > 0 and at most {MAX_DURATION_SECONDS:,} s, and "
            "node_output_limit_bytes >= 256",
            rule="flow",
            tool_name=name,
        )
    blueprint = plan_flow(
        name,
        nodes=nodes,
        edges=edges,
        tools=tools,
        input_schema=input_schema,
        output=output,
        timeout_seconds=seconds,
        node_output_limit_bytes=node_output_limit_bytes,
    )
    node_tools = blueprint.node_tools

    def visible(identity: Identity) -> bool:  # fail closed: every node must be visible
        return all(tool.is_visible_to(identity) for tool in node_tools)

    # The spec says how the call runs: once, bound by the flow's timeout.
    policy = {"start_to_close_timeout": seconds, "retry": RetrySpec(maximum_attempts=1)}
    settings: dict[str, Any] = {"safety": blueprint.safety, **options, **policy, "local": False}
    if blueprint.needs_approval:
        settings["approval"] = True
    settings["auth_scopes"] = sorted({*blueprint.auth_scopes, *options.get("auth_scopes", ())})
    settings.setdefault("visible_to", visible)
    plan = blueprint.plan.model_dump(mode="json")
    return StubTool(
        name=name,
        handler=refusing_handler(f"flow {name!r} runs as a child workflow, not as an activity"),
        input_schema=blueprint.input_schema,
        options={**settings, "name": name, "description": description},
        spec_update={"flow": plan, "transport": "flow", "source": f"flow:{name}"},
    )
