"""Tools whose schema is given rather than derived: MCP, OpenAPI and HTTP tools.

Their handler takes the validated arguments as one dict (`arguments`) and the call's
`ToolContext` (`ctx`), so a tool source can serve many tools with one function.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict

from ._context import ToolContext
from ._names import ToolRegistrationError
from ._registered import RegisteredTool
from ._schema import ParameterPlan, SignaturePlan
from ._schema_strict import make_strict

__all__ = ["SchemaHandler", "SchemaTool", "plan_for_schema"]

SchemaHandler = Callable[..., Any | Awaitable[Any]]
"""`handler(arguments: dict[str, Any], ctx: ToolContext) -> result` (sync or async)."""


class _AnyArguments(BaseModel):
    model_config = ConfigDict(extra="allow")


def plan_for_schema(schema: Mapping[str, Any], *, tool_name: str, strict: bool) -> SignaturePlan:
    """The plan of a schema-given tool: arguments pass through as a dict, plus the context.

    Raises:
        ToolRegistrationError: the schema is not a valid JSON Schema for an object.
    """
    lax = dict(schema)
    try:
        Draft202012Validator.check_schema(lax)
    except SchemaError as exc:
        raise ToolRegistrationError(
            f"tool {tool_name!r}: input_schema is not a valid JSON Schema: {exc.message}",
            rule="schema",
            tool_name=tool_name,
        ) from None
    if lax.get("type", "object") != "object":
        raise ToolRegistrationError(
            f"tool {tool_name!r}: input_schema must describe an object, not {lax.get('type')!r}",
            rule="schema",
            tool_name=tool_name,
        )
    lax.setdefault("type", "object")
    return SignaturePlan(
        params=(ParameterPlan(name="ctx", source="context"),),
        input_model=_AnyArguments,
        single_model=None,
        lax_schema=lax,
        input_schema=make_strict(lax, tool_name=tool_name) if strict else lax,
        output_schema=None,
    )


@dataclass(frozen=True)
class SchemaTool(RegisteredTool):
    """A registered tool whose handler receives `arguments` (a dict) and `ctx`."""

    def to_python(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The validated arguments, as one dict; the schema already checked them."""
        return {"arguments": dict(args)}

    def inject(self, values: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        """Add the context as `ctx`."""
        return {**values, "ctx": context}
