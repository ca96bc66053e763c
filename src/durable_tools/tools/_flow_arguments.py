"""The arguments of a flow's nodes, checked against their tools: parameters, literals,
references, and whether the JSON Schema types of sources and targets can line up."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from durable_tools.tools._flow_json import (
    MISSING,
    JsonSchema,
    compatible,
    describe,
    field_schema,
    json_types,
)
from durable_tools.tools._flow_model import LITERAL_KEY, Reference, parse_reference
from durable_tools.tools._names import ToolRegistrationError
from durable_tools.tools._registered import RegisteredTool
from durable_tools.tools._results import ToolResult
from durable_tools.tools._schema import output_schema_for
from durable_tools.tools._schema_tools import SchemaTool
from durable_tools.tools._validation import format_schema_errors

__all__ = [
    "Use",
    "check_types",
    "flow_error",
    "input_schema_for",
    "output_schema_of",
    "walk_arguments",
    "with_strict_nulls",
]


@dataclass
class Use:
    """One reference in a node's arguments, and the schema of the place it feeds."""

    node: str
    where: str
    """`argument 'city'` or `argument 'query.city'`, for messages."""
    reference: Reference
    target: JsonSchema | None


def flow_error(flow: str, message: str) -> ToolRegistrationError:
    return ToolRegistrationError(f"flow {flow!r}: {message}", rule="flow", tool_name=flow)


def output_schema_of(tool: RegisteredTool) -> JsonSchema | None:
    """The JSON Schema of what a node's tool outputs, when it can be known."""
    if tool.spec.output_schema is not None:
        return tool.spec.output_schema
    if isinstance(tool, SchemaTool):
        return None
    try:
        returns = typing.get_type_hints(tool.fn).get("return")
        if isinstance(returns, type) and issubclass(returns, ToolResult):
            return None  # a ToolResult carries anything
        return output_schema_for(tool.fn, tool_name=tool.spec.name)
    except Exception:  # an annotation that does not resolve: nothing to check against
        return None


def _param_schema(tool: RegisteredTool, path: tuple[str, ...]) -> JsonSchema | None:
    return field_schema(tool.spec.input_schema, path)


def walk_arguments(
    flow: str, node_id: str, tool: RegisteredTool, arguments: Mapping[str, Any]
) -> list[Use]:
    """Check parameter names, required ones and literals; collect the references."""
    schema = tool.spec.input_schema
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    assert isinstance(props, dict)
    name = tool.spec.name
    for param in arguments:
        if param not in props and schema.get("additionalProperties") is False:
            known = ", ".join(sorted(props)) or "none"
            raise flow_error(
                flow,
                f"node {node_id!r}: tool {name!r} has no parameter {param!r} (its parameters: "
                f"{known})",
            )
    missing = [p for p in schema.get("required", []) if p not in arguments]
    if missing:
        raise flow_error(
            flow,
            f"node {node_id!r}: tool {name!r} needs {', '.join(repr(p) for p in missing)}, "
            "which the node does not give",
        )
    uses: list[Use] = []

    def walk(value: Any, path: tuple[str, ...]) -> None:
        where = f"argument {'.'.join(path)!r}"
        try:
            reference = parse_reference(value)
        except ValueError as exc:
            raise flow_error(flow, f"node {node_id!r}, {where}: {exc}") from None
        if reference is not None:
            uses.append(Use(node_id, where, reference, _param_schema(tool, path)))
            return
        if isinstance(value, dict) and set(value) == {LITERAL_KEY}:
            _check_literal(flow, node_id, where, value[LITERAL_KEY], tool, path)
            return
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*path, str(key)))
            return
        if isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*path, str(index)))
            return
        _check_literal(flow, node_id, where, value, tool, path)

    for param, value in arguments.items():
        walk(value, (param,))
    return uses


def _check_literal(
    flow: str, node_id: str, where: str, value: Any, tool: RegisteredTool, path: tuple[str, ...]
) -> None:
    target = _param_schema(tool, path)
    if target is None or target is MISSING:
        return
    defs = tool.spec.input_schema.get("$defs")
    schema = {**target, "$defs": defs} if isinstance(defs, dict) else target
    try:
        errors = format_schema_errors(Draft202012Validator(schema).iter_errors(value))
    except Exception:  # an exotic schema: the node's own validation checks at run time
        return
    if errors:
        raise flow_error(
            flow,
            f"node {node_id!r}, {where}: the literal {value!r:.60} does not fit tool "
            f"{tool.spec.name!r}: {errors[0]}",
        )


def with_strict_nulls(tool: RegisteredTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """A strict tool's schema requires every parameter, null meaning "not given" (the
    tool then drops it and its default applies): a node leaving out an optional one
    passes that null, as a model would."""
    if not tool.spec.strict:
        return arguments
    optional = set(tool.spec.input_schema.get("properties", {})) - set(
        tool.plan.lax_schema.get("required", [])
    )
    return {**{p: None for p in sorted(optional) if p not in arguments}, **arguments}


def input_schema_for(flow: str, given: Mapping[str, Any] | None, uses: list[Use]) -> JsonSchema:
    """The flow's input schema: the one given (checked), or one derived from `$args`."""
    if given is not None:
        schema = dict(given)
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise flow_error(
                flow, f"input_schema is not a valid JSON Schema: {exc.message}"
            ) from None
        if schema.get("type") != "object":
            raise flow_error(flow, 'input_schema must describe an object ("type": "object")')
        declared = schema.get("properties", {})
        for use in uses:
            reference = use.reference
            if reference.node is None and reference.path and reference.path[0] not in declared:
                raise flow_error(
                    flow,
                    f"node {use.node!r}, {use.where}: unknown reference {reference}: "
                    f"input_schema has no property {reference.path[0]!r}",
                )
        return schema
    properties: dict[str, JsonSchema] = {}
    for use in uses:
        reference = use.reference
        if reference.node is not None:
            continue
        if len(reference.path) != 1:
            raise flow_error(
                flow,
                f"node {use.node!r}, {use.where}: {reference} needs an explicit input_schema "
                "(only $args.NAME references are derived)",
            )
        arg = reference.path[0]
        target = use.target if use.target not in (None, MISSING) else {}
        assert target is not None
        if arg in properties:
            first = json_types(properties[arg])
            if not compatible(first, json_types(target)):
                raise flow_error(
                    flow,
                    f"node {use.node!r}, {use.where}: $args.{arg} feeds parameters of "
                    f"different types ({describe(first)} and {describe(json_types(target))}); "
                    "give an input_schema",
                )
            continue
        properties[arg] = dict(target)
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def check_types(
    flow: str,
    use: Use,
    arguments_schema: JsonSchema,
    outputs: Mapping[str, JsonSchema | None],
) -> None:
    reference = use.reference
    if reference.node is None:
        source = field_schema(arguments_schema, reference.path)
        what = f"flow argument {reference}"
    else:
        source = field_schema(outputs[reference.node], reference.path)
        what = reference.text
        if source is MISSING:
            raise flow_error(
                flow,
                f"node {use.node!r}, {use.where}: unknown reference {reference}: the output of "
                f"node {reference.node!r} has no field {'.'.join(reference.path)!r}",
            )
    if use.target is MISSING:
        return  # already refused as an unknown parameter, or a nested place with no schema
    have, want = json_types(source), json_types(use.target)
    if not compatible(have, want):
        raise flow_error(
            flow,
            f"node {use.node!r}, {use.where}: type mismatch: {what} is {describe(have)}, "
            f"the parameter takes {describe(want)}",
        )
