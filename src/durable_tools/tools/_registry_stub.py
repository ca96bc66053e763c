"""Tools registered from a schema whose body never runs as an activity.

Sub-agents, flows and callback tools are offered to the model like any tool, but a run
carries them out itself (a child workflow, or a client): their handler only refuses, and
their spec is stamped afterwards with what the run needs to know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._context import ToolContext
from ._errors import ToolExecutionError
from ._names import ToolRegistrationError
from ._schema_tools import SchemaHandler
from ._spec import ExecutionPolicy

__all__ = ["StubTool", "given_policy_options", "refuse_options", "refusing_handler"]


@dataclass(frozen=True)
class StubTool:
    """What `ToolRegistry` registers for a tool it does not run as an activity."""

    name: str
    handler: SchemaHandler
    input_schema: Mapping[str, Any]
    options: dict[str, Any]
    """`register_schema` options (`name=` included)."""
    spec_update: dict[str, Any]
    """Fields set on the registered tool's spec (`transport`, `flow`, `callback`, ...)."""


def refusing_handler(message: str) -> SchemaHandler:
    """A handler that raises `ToolExecutionError(message)`: the tool is never an activity."""

    def not_an_activity(arguments: dict[str, Any], ctx: ToolContext) -> None:
        raise ToolExecutionError(message)

    return not_an_activity


def given_policy_options(options: Mapping[str, Any]) -> set[str]:
    """The execution options the caller set: flat keywords, and fields set on `policy=`."""
    given = {key for key in options if key in ExecutionPolicy.model_fields}
    policy = options.get("policy")
    if isinstance(policy, ExecutionPolicy):
        given |= policy.model_fields_set
    return given


def refuse_options(
    what: str, name: str, options: Mapping[str, Any], refused: Mapping[str, str]
) -> None:
    """Refuse, naming each and why, the options `what` cannot honour (`refused`: option ->
    why). An option accepted and then silently ignored is worse than an error at start-up.

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
        for key in given_policy_options(options) & refused.keys()
        if value(key) is not None and not (key == "local" and value(key) is False)
    )
    if given:
        reasons = "; ".join(f"{key}: {refused[key]}" for key in given)
        raise ToolRegistrationError(
            f"{what} {name!r}: option(s) {', '.join(given)} cannot be honoured: {reasons}",
            rule="options",
            tool_name=name,
        )
