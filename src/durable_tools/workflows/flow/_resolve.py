"""Filling a node's argument template from the flow's arguments and earlier outputs.

Pure and deterministic: the flow workflow calls it with values already in its history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from durable_tools.tools._flow_model import LITERAL_KEY, Reference, parse_reference
from durable_tools.tools._results import ToolOutcome

__all__ = ["OUTPUT_CUT", "Unresolvable", "node_value", "read", "resolve"]

OUTPUT_CUT = "[output truncated: "
"""How a tool outcome whose text was cut to the output limit says so (see `format_result`)."""


class Unresolvable(Exception):
    """A reference cannot be read at run time (a field the output does not have)."""


def node_value(outcome: ToolOutcome, limit_bytes: int) -> Any:
    """The value a node's output passes on: its structured result, else its text.

    Raises:
        Unresolvable: the output was over `limit_bytes` and went to the artifact store,
            so what is left in the outcome is an excerpt, not the value.
    """
    if outcome.structured is not None:
        return outcome.structured
    if OUTPUT_CUT in outcome.content:
        where = ", ".join(ref.uri for ref in outcome.artifacts) or "nowhere (no artifact store)"
        raise Unresolvable(
            f"its output is over the flow's node budget of {limit_bytes:,} bytes (kept in "
            f"{where}); raise node_output_limit_bytes or have the tool return less"
        )
    return outcome.content


def read(reference: Reference, arguments: Mapping[str, Any], values: Mapping[str, Any]) -> Any:
    """The value `reference` points at.

    Raises:
        Unresolvable: a field or index on the path is not there.
    """
    if reference.node is not None and reference.node not in values:
        raise Unresolvable(f"{reference} reads node {reference.node!r}, which has not run")
    value: Any = dict(arguments) if reference.node is None else values[reference.node]
    for part in reference.path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise Unresolvable(f"{reference} has no value at {part!r}")
    return value


def resolve(template: Any, arguments: Mapping[str, Any], values: Mapping[str, Any]) -> Any:
    """`template` with every reference replaced by its value and `$literal`s unwrapped.

    Raises:
        Unresolvable: as for `read`, or a malformed reference (a hand-made plan).
    """
    try:
        reference = parse_reference(template)
    except ValueError as exc:
        raise Unresolvable(str(exc)) from None
    if reference is not None:
        return read(reference, arguments, values)
    if isinstance(template, dict):
        if set(template) == {LITERAL_KEY}:
            return template[LITERAL_KEY]
        return {key: resolve(item, arguments, values) for key, item in template.items()}
    if isinstance(template, list):
        return [resolve(item, arguments, values) for item in template]
    return template
