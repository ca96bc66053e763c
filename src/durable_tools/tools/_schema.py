"""From a Python signature to the JSON Schema the model sees, and back to arguments.

Pydantic builds the schema, so the schema and the validation that turns JSON into
Python values come from one source. Injected parameters (`ToolContext`, anything
annotated `Injected(...)`) are left out of the schema: the model never learns they
exist, and cannot set them.
"""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.fields import FieldInfo

from ._context import Injected, ToolContext
from ._docstrings import Docstring
from ._names import ToolRegistrationError

__all__ = [
    "ParameterPlan",
    "SignaturePlan",
    "clean_schema",
    "drop_added_nulls",
    "make_strict",
    "output_schema_for",
    "plan_signature",
    "schema_for_model",
]

JsonSchema = dict[str, Any]

# Keywords whose values are subschemas, by shape; everything else is data (enum values,
# defaults, examples) and must not be rewritten.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_SINGLE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_TYPED = ("type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not")


@dataclass(frozen=True)
class ParameterPlan:
    """Where one parameter of the tool function gets its value."""

    name: str
    """The parameter's name in the function signature."""
    source: Literal["model", "context", "injected"]
    """From the model's arguments, the `ToolContext`, or a worker-side resource or secret."""
    injected: Injected | None = None
    """For `injected` parameters: which resource or secret."""
    field: str | None = None
    """For `model` parameters: the field of the input model holding the value."""
    default: Any = inspect.Parameter.empty
    """The parameter's default, used when an injected resource is absent."""


@dataclass(frozen=True)
class SignaturePlan:
    """Everything the registry derives from a tool function's signature."""

    params: tuple[ParameterPlan, ...]
    input_model: type[BaseModel]
    """Validates the model's (JSON-valid) arguments into Python values."""
    single_model: str | None
    """The parameter that receives the whole input model, when the tool takes one model."""
    lax_schema: JsonSchema
    """The cleaned schema before strict rewriting; tells which nulls strict mode added."""
    input_schema: JsonSchema
    """The model-visible schema (strict when the tool is)."""
    output_schema: JsonSchema | None
    """Derived from a pydantic return annotation, if any."""


def _injection(annotation: Any) -> tuple[str, Injected | None] | None:
    """Whether an annotation marks an injected parameter, and how."""
    if annotation is ToolContext:
        return ("context", None)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        for meta in annotation.__metadata__:
            if isinstance(meta, Injected):
                return ("injected", meta)
        return _injection(typing.get_args(annotation)[0])
    if origin in (typing.Union, UnionType):
        args = [a for a in typing.get_args(annotation) if a is not NoneType]
        if len(args) == 1:
            return _injection(args[0])
    return None


def _is_model_type(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _has_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Annotated:
        return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)
    return False


def plan_signature(
    fn: Callable[..., Any],
    *,
    tool_name: str,
    docstring: Docstring,
    strict: bool,
) -> SignaturePlan:
    """Derive the schema and the argument plan of a tool function.

    Args:
        fn: The tool function, sync or async.
        tool_name: The tool's name, for error messages and the model's title.
        docstring: The parsed docstring, for parameter descriptions.
        strict: Rewrite the schema for OpenAI strict function calling.

    Raises:
        ToolRegistrationError: `*args`/`**kwargs`, positional-only parameters,
            unresolvable annotations, or a schema that strict mode cannot express.
    """
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError for forward references is the usual cause
        raise ToolRegistrationError(
            f"tool {tool_name!r}: cannot resolve the type annotations of {fn.__qualname__}: "
            f"{exc}. Define referenced types at module level.",
            rule="signature",
            tool_name=tool_name,
        ) from exc
    signature = inspect.signature(fn)
    plans: list[ParameterPlan] = []
    fields: dict[str, Any] = {}
    model_params: list[tuple[str, Any]] = []
    for index, param in enumerate(signature.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise ToolRegistrationError(
                f"tool {tool_name!r}: parameter {star}{param.name} is not allowed; a tool's "
                "arguments must be named so the model can see them in the schema",
                rule="signature",
                tool_name=tool_name,
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolRegistrationError(
                f"tool {tool_name!r}: positional-only parameter {param.name!r} is not "
                "supported; tools are called with keyword arguments",
                rule="signature",
                tool_name=tool_name,
            )
        annotation = hints.get(param.name, Any)
        injection = _injection(annotation)
        if injection is not None:
            source, marker = injection
            plans.append(
                ParameterPlan(
                    name=param.name,
                    source="context" if source == "context" else "injected",
                    injected=marker,
                    default=param.default,
                )
            )
            continue
        # Field names are synthetic and the parameter name is the alias: a parameter may
        # then be called `json`, `schema` or `model_name` without clashing with BaseModel.
        field_name = f"p{index}"
        info: dict[str, Any] = {"alias": param.name}
        if param.name in docstring.params and not _has_description(annotation):
            info["description"] = docstring.params[param.name]
        default = param.default
        if isinstance(default, FieldInfo):
            # `x: int = Field(3, ge=1)`: keep its constraints and documentation, but the
            # alias must stay the parameter's name.
            if default.metadata:
                annotation = typing.Annotated[(annotation, *default.metadata)]  # type: ignore[valid-type]
            if default.description:
                info["description"] = default.description
            if default.default_factory is not None:
                info["default_factory"] = default.default_factory
            elif not default.is_required():
                info["default"] = default.default
            if default.examples:
                info["examples"] = default.examples
            if default.json_schema_extra is not None:
                info["json_schema_extra"] = default.json_schema_extra
        elif default is not param.empty:
            info["default"] = default
        fields[field_name] = (annotation, Field(**info))
        plans.append(ParameterPlan(name=param.name, source="model", field=field_name))
        model_params.append((param.name, annotation))

    single_model: str | None = None
    if len(model_params) == 1 and _is_model_type(model_params[0][1]):
        single_model = model_params[0][0]
        input_model: type[BaseModel] = model_params[0][1]
    else:
        try:
            input_model = create_model(  # type: ignore[call-overload]
                f"{tool_name}_arguments",
                __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
                **fields,
            )
        except Exception as exc:
            raise ToolRegistrationError(
                f"tool {tool_name!r}: cannot build an argument model: {exc}",
                rule="signature",
                tool_name=tool_name,
            ) from exc

    lax = schema_for_model(input_model, tool_name=tool_name, mode="validation")
    lax["additionalProperties"] = False
    input_schema = make_strict(lax, tool_name=tool_name) if strict else copy.deepcopy(lax)

    output_schema: JsonSchema | None = None
    returns = hints.get("return")
    if isinstance(returns, type) and issubclass(returns, BaseModel):
        output_schema = schema_for_model(returns, tool_name=tool_name, mode="serialization")
    return SignaturePlan(
        params=tuple(plans),
        input_model=input_model,
        single_model=single_model,
        lax_schema=lax,
        input_schema=input_schema,
        output_schema=output_schema,
    )


def output_schema_for(fn: Callable[..., Any], *, tool_name: str) -> JsonSchema | None:
    """The JSON Schema of `fn`'s return annotation, whatever type it is, or None.

    Built with a pydantic `TypeAdapter` in serialization mode: the schema of what the tool
    returns once made JSON-able. None when there is no annotation, or it is `Any` or
    `None`, or pydantic cannot describe it (then nothing is checked).

    Raises:
        ToolRegistrationError: the return annotation cannot be resolved.
    """
    try:
        returns = typing.get_type_hints(fn, include_extras=True).get("return")
    except Exception as exc:
        raise ToolRegistrationError(
            f"tool {tool_name!r}: cannot resolve the return annotation: {exc}",
            rule="signature",
            tool_name=tool_name,
        ) from exc
    if returns is None or returns is Any or returns is type(None):
        return None
    if isinstance(returns, type) and issubclass(returns, BaseModel):
        return schema_for_model(returns, tool_name=tool_name, mode="serialization")
    try:
        return TypeAdapter(returns).json_schema(mode="serialization")
    except Exception:
        return None


def schema_for_model(
    model: type[BaseModel], *, tool_name: str, mode: Literal["validation", "serialization"]
) -> JsonSchema:
    """The cleaned JSON Schema of a pydantic model.

    Raises:
        ToolRegistrationError: pydantic cannot express a field's type as JSON Schema.
    """
    try:
        raw = model.model_json_schema(mode=mode)
    except Exception as exc:
        raise ToolRegistrationError(
            f"tool {tool_name!r}: a type has no JSON Schema ({exc}); use JSON-able types "
            "or mark worker-side values with Injected(...)",
            rule="signature",
            tool_name=tool_name,
        ) from exc
    return clean_schema(raw)


def _subschemas(node: JsonSchema) -> Iterator[JsonSchema]:
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, dict))
    for key in _SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            yield from (v for v in value if isinstance(v, dict))
    for key in _SCHEMA_SINGLE:
        value = node.get(key)
        if isinstance(value, dict):
            yield value


def _all_nodes(node: JsonSchema) -> Iterator[JsonSchema]:
    yield node
    for child in _subschemas(node):
        yield from _all_nodes(child)


def _inline(node: Any, defs: JsonSchema, stack: frozenset[str], keep: set[str]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, stack, keep) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        key = ref.removeprefix("#/$defs/")
        siblings = {k: _inline(v, defs, stack, keep) for k, v in node.items() if k != "$ref"}
        if key in stack or key not in defs:
            # A recursive model cannot be inlined: keep the reference and its definition.
            keep.add(key)
            return {"$ref": ref, **siblings}
        target = _inline(defs[key], defs, stack | {key}, keep)
        return {**target, **siblings}
    return {k: _inline(v, defs, stack, keep) for k, v in node.items()}


def clean_schema(schema: JsonSchema) -> JsonSchema:
    """Inline `$ref`s and drop pydantic's `title` noise, so every provider accepts it.

    Recursive definitions stay under `$defs` (they cannot be inlined). Property names
    are never touched, even one called `title`.
    """
    schema = copy.deepcopy(schema)
    defs: JsonSchema = schema.pop("$defs", {})
    keep: set[str] = set()
    result: JsonSchema = _inline(schema, defs, frozenset(), keep)
    kept: JsonSchema = {}
    pending = set(keep)
    while pending:
        key = pending.pop()
        found: set[str] = set()
        kept[key] = _inline(defs[key], defs, frozenset({key}), found)
        pending |= found - kept.keys()
    if kept:
        result["$defs"] = dict(sorted(kept.items()))
    for node in _all_nodes(result):
        if isinstance(node.get("title"), str):
            del node["title"]
    return result


def _nullable(prop: JsonSchema) -> JsonSchema:
    """`prop`, also accepting null: how strict mode says 'optional'."""
    if _accepts_null(prop, {}):
        return prop
    kind = prop.get("type")
    if isinstance(kind, str) and not ({"enum", "const"} & prop.keys()):
        return {**prop, "type": [kind, "null"]}
    if isinstance(prop.get("anyOf"), list):
        return {**prop, "anyOf": [*prop["anyOf"], {"type": "null"}]}
    wrapped = {k: v for k, v in prop.items() if k != "description"}
    result: JsonSchema = {"anyOf": [wrapped, {"type": "null"}]}
    if "description" in prop:
        result["description"] = prop["description"]
    return result


def _strictify(node: JsonSchema, path: str, tool_name: str) -> JsonSchema:
    def fail(why: str) -> ToolRegistrationError:
        return ToolRegistrationError(
            f"tool {tool_name!r} is strict, but the schema at {path} {why}; "
            "strict function calling needs every object's properties to be declared",
            rule="strict",
            tool_name=tool_name,
        )

    # OpenAI strict mode does not support `default`; the default still applies on our side
    # because a null for an optional argument is dropped before validation into Python.
    node = {k: v for k, v in node.items() if k != "default"}
    for key in _SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            node[key] = {
                name: _strictify(sub, f"{path}.{key}.{name}", tool_name)
                if isinstance(sub, dict)
                else sub
                for name, sub in node[key].items()
            }
    for key in _SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            node[key] = [
                _strictify(sub, f"{path}.{key}[{i}]", tool_name) if isinstance(sub, dict) else sub
                for i, sub in enumerate(node[key])
            ]
    for key in _SCHEMA_SINGLE:
        if isinstance(node.get(key), dict):
            node[key] = _strictify(node[key], f"{path}.{key}", tool_name)
    if not (set(_TYPED) & node.keys()):
        raise fail("has no type (Any)")
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False) or "patternProperties" in node:
            raise fail("allows free-form keys (a dict)")
        if "properties" not in node and node.get("type") == "object" and path != "$":
            raise fail("is a free-form object")
        props: JsonSchema = node.get("properties", {})
        required = set(node.get("required", []))
        node["properties"] = {
            name: sub if name in required else _nullable(sub) for name, sub in props.items()
        }
        node["required"] = list(props)
        node["additionalProperties"] = False
    return node


def make_strict(schema: JsonSchema, *, tool_name: str) -> JsonSchema:
    """Rewrite a cleaned schema for OpenAI strict function calling.

    Every object gets `additionalProperties: false` and lists all its properties as
    required; properties that were optional become nullable instead.

    Raises:
        ToolRegistrationError: the schema has free-form objects or untyped values,
            which strict mode cannot express.
    """
    return _strictify(copy.deepcopy(schema), "$", tool_name)


def _resolve(schema: JsonSchema, defs: JsonSchema) -> JsonSchema:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            return target
    return schema


def _accepts_null(schema: JsonSchema, defs: JsonSchema) -> bool:
    schema = _resolve(schema, defs)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    return any(
        isinstance(branch, dict) and _accepts_null(branch, defs)
        for key in ("anyOf", "oneOf")
        for branch in schema.get(key, [])
    )


def drop_added_nulls(value: Any, lax_schema: JsonSchema) -> Any:
    """Remove the nulls a strict schema forced the model to send for omitted arguments.

    In strict mode an optional argument is required-but-nullable, so the model sends
    `null` to mean "not given". Where the original (lax) schema does not accept null,
    the key is dropped so the Python default applies.
    """
    defs: JsonSchema = lax_schema.get("$defs", {})

    def walk(item: Any, schema: JsonSchema) -> Any:
        schema = _resolve(schema, defs)
        if isinstance(item, dict):
            props = schema.get("properties")
            if not isinstance(props, dict):
                branches = [
                    _resolve(b, defs) for b in schema.get("anyOf", []) if isinstance(b, dict)
                ]
                objects = [b for b in branches if isinstance(b.get("properties"), dict)]
                if len(objects) != 1:
                    return item
                schema, props = objects[0], objects[0]["properties"]
            required = set(schema.get("required", []))
            out: dict[str, Any] = {}
            for key, sub in item.items():
                prop = props.get(key)
                if not isinstance(prop, dict):
                    out[key] = sub
                elif sub is None and key not in required and not _accepts_null(prop, defs):
                    continue
                else:
                    out[key] = walk(sub, prop)
            return out
        if isinstance(item, list) and isinstance(schema.get("items"), dict):
            return [walk(x, schema["items"]) for x in item]
        return item

    return walk(value, lax_schema)
