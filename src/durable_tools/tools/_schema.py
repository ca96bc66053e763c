"""From a Python signature to the JSON Schema the model sees, and back to arguments.

Pydantic builds the schema, so the schema and the validation that turns JSON into
Python values come from one source. Injected parameters (`ToolContext`, anything
annotated `Injected(...)`) are left out of the schema: the model never learns they
exist, and cannot set them. Cleaning the schema is `_schema_clean`'s job, strict mode
`_schema_strict`'s; import their functions from there.
"""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.fields import FieldInfo

from ._context import Injected, ToolContext
from ._docstrings import Docstring
from ._names import ToolRegistrationError
from ._schema_clean import JsonSchema, schema_for_model
from ._schema_strict import make_strict

__all__ = ["ParameterPlan", "SignaturePlan", "output_schema_for", "plan_signature"]


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
