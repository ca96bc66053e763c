"""Tools the run carries out itself: sub-agents, flows and callback tools.

They are offered to the model like any tool, but no activity runs their body: a
sub-agent or a flow call is a child workflow, a callback tool call is run by a client
attached to the run. `ToolRegistry` registers each from a schema, with a handler that
only refuses, then stamps its spec with what the run needs to know (`subagent`,
`flow`, `callback`, `transport`). The execution options such a tool cannot honour are
refused at registration, naming each and why: an option accepted and then silently
ignored is worse than an error at start-up.

Sub-agents accept the execution options that mean something for a child workflow:

- `start_to_close_timeout` / `schedule_to_close_timeout`: the child run's whole bound (its
  execution timeout, continue-as-new included; the tighter of the two when both are
  given). A child still running then is ended by Temporal and the model is told so. None
  given: no bound (a child may wait days for a person's approval).
- `task_queue`: the child runs on workers of that queue (they must run the agent
  workflow and the child's tools).
- `max_calls_per_run`: counted like any tool's.

A flow is bounded by its own `timeout=` and each node runs under its own tool's policy,
so a flow refuses every activity option; a callback tool refuses them too (`timeout=`
bounds the wait for a client).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from .._durations import MAX_DURATION_SECONDS
from ._context import Identity, ToolContext
from ._errors import ToolExecutionError
from ._flow_plan import plan_flow
from ._names import ToolRegistrationError
from ._options import ToolOptions
from ._registered import RegisteredTool
from ._schema_clean import schema_for_model
from ._schema_tools import SchemaHandler
from ._spec import ExecutionPolicy, RetrySpec

__all__ = ["DelegatedTool", "callback_registration", "flow_registration", "subagent_registration"]


@dataclass(frozen=True)
class DelegatedTool:
    """What `ToolRegistry` registers for a tool it does not run as an activity."""

    name: str
    handler: SchemaHandler
    input_schema: Mapping[str, Any]
    options: dict[str, Any]
    """`register_schema` options (`name=` included)."""
    spec_update: dict[str, Any]
    """Fields set on the registered tool's spec (`transport`, `flow`, `callback`, ...)."""


# ------------------------------------------------------------------ sub-agents

_SUBAGENT_REFUSED = MappingProxyType(
    {
        "retry": (
            "a sub-agent call runs its child agent once; running a whole agent again would "
            "repeat every tool call it made (its own tools retry under their own policies)"
        ),
        "heartbeat_timeout": (
            "a child workflow does not heartbeat; bound it with start_to_close_timeout"
        ),
        "max_concurrent": (
            "it caps a tool's activity task queue, and a sub-agent runs as a child workflow; "
            "bound its calls with max_calls_per_run"
        ),
        "rate_limit": (
            "it paces a tool's activity task queue, and a sub-agent runs as a child workflow; "
            "bound its calls with max_calls_per_run"
        ),
        "local": "a sub-agent runs as a child workflow, never as a local activity",
    }
)
"""Execution options with no meaning for a child workflow: option -> why."""


def subagent_registration(
    config: Mapping[str, Any] | Any, options: Mapping[str, Any]
) -> DelegatedTool:
    """The registration of a sub-agent (see `ToolRegistry.subagent`).

    Raises:
        ToolRegistrationError: no `name=`, a config without a model, or an execution
            option a child workflow cannot honour (`rule="options"`).
    """
    name = options.get("name")
    if not name:
        raise ToolRegistrationError("a sub-agent needs name=", rule="empty", tool_name=None)
    _refuse_options("sub-agent", name, options, _SUBAGENT_REFUSED)
    dumped = config.model_dump(mode="json") if hasattr(config, "model_dump") else dict(config)
    if "model" not in dumped:
        raise ToolRegistrationError(
            f"sub-agent {name!r}: config needs a model", rule="options", tool_name=name
        )
    source = f"agent:{dumped.get('name', 'agent')}"
    return DelegatedTool(
        name=name,
        handler=_refusing_handler(
            f"sub-agent {name!r} runs as a child workflow, not as an activity"
        ),
        input_schema=_task_schema(),
        options={**options, **_child_policy(options)},
        spec_update={"subagent": dumped, "transport": "sub-agent", "source": source},
    )


def _task_schema() -> dict[str, Any]:
    """A sub-agent's arguments, built fresh for each: a spec's schema edited in place
    must not edit every other sub-agent's."""
    return {
        "type": "object",
        "properties": {"task": {"type": "string", "description": "What the sub-agent should do."}},
        "required": ["task"],
        "additionalProperties": False,
    }


def _child_policy(options: Mapping[str, Any]) -> dict[str, Any]:
    """Flat policy options that make the spec say how the child runs: one attempt, bound
    by the tighter timeout given (in both timeout fields), or by none."""
    given = _given_policy_options(options)
    policy = options.get("policy")
    base = policy if isinstance(policy, ExecutionPolicy) else ExecutionPolicy()
    bounds = [
        options.get(key, getattr(base, key))
        for key in ("start_to_close_timeout", "schedule_to_close_timeout")
        if key in given
    ]
    seconds = [b.total_seconds() if isinstance(b, timedelta) else b for b in bounds]
    update: dict[str, Any] = {"retry": RetrySpec(maximum_attempts=1), "local": False}
    present = [s for s in seconds if s is not None]
    # Anything but finite numbers is left as given, for the policy's validation to refuse
    # by name (min() would drop a NaN, or fail on a string).
    if present and all(_finite_number(s) for s in present):
        bound = min(present)
        update |= {"start_to_close_timeout": bound, "schedule_to_close_timeout": bound}
    return update


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# ------------------------------------------------------------------------ flows

_NODES_OWN = "each node runs under its own tool's policy (or its FlowNode policy=)"
_FLOW_REFUSED = MappingProxyType(
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


def flow_registration(
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
) -> DelegatedTool:
    """The registration of a flow over `tools` (see `ToolRegistry.flow`).

    Raises:
        ToolRegistrationError: `rule="flow"` for a flow that does not validate.
    """

    given = sorted({"name", "description"} & options.keys())
    if given:  # as when they were passed on to `register_schema` beside the positional ones
        raise TypeError(f"flow() got multiple values for keyword argument {given[0]!r}")
    _refuse_options("flow", name, options, _FLOW_REFUSED)
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
    return DelegatedTool(
        name=name,
        handler=_refusing_handler(f"flow {name!r} runs as a child workflow, not as an activity"),
        input_schema=blueprint.input_schema,
        options={**settings, "name": name, "description": description},
        spec_update={"flow": plan, "transport": "flow", "source": f"flow:{name}"},
    )


# --------------------------------------------------------------- callback tools

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


def callback_registration(
    name: str,
    *,
    parameters: Mapping[str, Any] | type[BaseModel] | None,
    output: Mapping[str, Any] | type[BaseModel] | None,
    timeout: float | timedelta,
    options: ToolOptions,
) -> DelegatedTool:
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
    return DelegatedTool(
        name=name,
        handler=_refusing_handler(f"callback tool {name!r} is run by a client, not a worker"),
        input_schema=schema,
        options=dict(given),
        spec_update={"callback": True, "transport": "callback"},
    )


# ---------------------------------------------------------------- shared checks


def _refusing_handler(message: str) -> SchemaHandler:
    """A handler that raises `ToolExecutionError(message)`: the tool is never an activity."""

    def not_an_activity(arguments: dict[str, Any], ctx: ToolContext) -> None:
        raise ToolExecutionError(message)

    return not_an_activity


def _given_policy_options(options: Mapping[str, Any]) -> set[str]:
    """The execution options the caller set: flat keywords, and fields set on `policy=`."""
    given = {key for key in options if key in ExecutionPolicy.model_fields}
    policy = options.get("policy")
    if isinstance(policy, ExecutionPolicy):
        given |= policy.model_fields_set
    return given


def _refuse_options(
    what: str, name: str, options: Mapping[str, Any], refused: Mapping[str, str]
) -> None:
    """Refuse, naming each and why, the options `what` cannot honour (`refused`: option ->
    why).

    Raises:
        ToolRegistrationError: `rule="options"`, when any refused option is given (flat, or
            as a field set on `policy=`).
    """
    policy = options.get("policy")

    def value(key: str) -> Any:
        return options[key] if key in options else getattr(policy, key, None)

    # None (and local=False) ask for what such a tool does anyway: nothing to refuse.
    given = sorted(
        key
        for key in _given_policy_options(options) & refused.keys()
        if value(key) is not None and not (key == "local" and value(key) is False)
    )
    if given:
        reasons = "; ".join(f"{key}: {refused[key]}" for key in given)
        raise ToolRegistrationError(
            f"{what} {name!r}: option(s) {', '.join(given)} cannot be honoured: {reasons}",
            rule="options",
            tool_name=name,
        )
