"""`ToolRegistry.subagent`: a tool that runs a child agent as a child workflow.

A sub-agent call is one child workflow, not an activity, so only the execution options
that have a meaning for a child workflow are accepted:

- `start_to_close_timeout` / `schedule_to_close_timeout`: the child run's whole bound (its
  execution timeout, continue-as-new included; the tighter of the two when both are
  given). A child still running then is ended by Temporal and the model is told so. None
  given: no bound (a child may wait days for a person's approval).
- `task_queue`: the child runs on workers of that queue (they must run the agent
  workflow and the child's tools).
- `max_calls_per_run`: counted like any tool's.

The others are refused at registration, naming the option and why (`_REFUSED`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from ._names import ToolRegistrationError
from ._registry_stub import StubTool, given_policy_options, refuse_options, refusing_handler
from ._spec import ExecutionPolicy, RetrySpec

__all__ = ["subagent_stub"]

_TASK_SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the sub-agent should do."}},
    "required": ["task"],
    "additionalProperties": False,
}

_REFUSED = MappingProxyType(
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


def subagent_stub(config: Mapping[str, Any] | Any, options: Mapping[str, Any]) -> StubTool:
    """The registration of a sub-agent (see `ToolRegistry.subagent`).

    Raises:
        ToolRegistrationError: no `name=`, a config without a model, or an execution
            option a child workflow cannot honour (`rule="options"`).
    """
    name = options.get("name")
    if not name:
        raise ToolRegistrationError("a sub-agent needs name=", rule="empty", tool_name=None)
    refuse_options("sub-agent", name, options, _REFUSED)
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
        options={**options, **_child_policy(options)},
        spec_update={"subagent": dumped, "transport": "sub-agent", "source": source},
    )


def _child_policy(options: Mapping[str, Any]) -> dict[str, Any]:
    """Flat policy options that make the spec say how the child runs: one attempt, bound
    by the tighter timeout given (in both timeout fields), or by none."""
    given = given_policy_options(options)
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
