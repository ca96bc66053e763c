"""Client-declared tools: tools a run's client (an AG-UI front end) declares and runs itself.

A client tool becomes a callback tool of the run (`ToolSpec.callback`): the model may call
it, the run publishes the call and waits durably for the client's answer
(`workflows/gates/_callback_gate.py`). Its declaration comes from outside the operator's
code, so everything about it is bounded here, before it reaches a workflow: the name
(ASCII, what every provider accepts: no look-alike of a server tool), the description,
and the parameters' schema (its size, its depth, local references only, and no regular
expressions: the run validates the model's arguments against it inside a workflow task,
where a pathological pattern would stall the task on every retry).
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from durable_tools.tools._names import PROVIDER_NAME_PATTERN

__all__ = [
    "CLIENT_TOOL_SOURCE",
    "MAX_CLIENT_TOOLS",
    "MAX_CLIENT_TOOL_DESCRIPTION_CHARS",
    "MAX_CLIENT_TOOL_SCHEMA_BYTES",
    "MAX_CLIENT_TOOL_SCHEMA_DEPTH",
    "MAX_CLIENT_TOOL_TIMEOUT_SECONDS",
    "ClientTool",
    "check_client_schema",
    "client_tool_key",
]

CLIENT_TOOL_SOURCE = "client"
"""`ToolSpec.source` of a client-declared tool: its calls are the client's to answer."""
MAX_CLIENT_TOOLS = 64
"""Most client tools one run takes (the run's catalog carries them all)."""
MAX_CLIENT_TOOL_DESCRIPTION_CHARS = 4_000
"""Longest description of a client tool (the model reads it with every request)."""
MAX_CLIENT_TOOL_SCHEMA_BYTES = 16_000
"""Largest parameters schema of a client tool, as compact JSON."""
MAX_CLIENT_TOOL_SCHEMA_DEPTH = 12
"""Deepest nesting of objects and arrays in a client tool's parameters schema."""
MAX_CLIENT_TOOL_TIMEOUT_SECONDS = 30 * 86_400.0
"""Longest a run waits for a client tool's answer."""

_REFUSED_KEYWORDS = frozenset({"pattern", "patternProperties", "$dynamicRef", "$recursiveRef"})
"""Schema keywords a client's schema may not use: regular expressions run in the workflow
task (a catastrophic one would stall it), and dynamic references resolve outside it."""


def client_tool_key(name: str) -> str:
    """What two tool names are compared by: names differing only in case are one name
    (a model, or a person reading a log, could not tell which is meant)."""
    return name.casefold()


_NAME_MAPS = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names (a parameter's, a definition's) to schemas: its keys
are names, not keywords (a parameter may be called `pattern`)."""


def _depth_and_refs(value: Any, depth: int, where: str, names: bool = False) -> None:
    if depth > MAX_CLIENT_TOOL_SCHEMA_DEPTH:
        raise ValueError(f"nested deeper than {MAX_CLIENT_TOOL_SCHEMA_DEPTH} levels at {where}")
    if isinstance(value, dict):
        for key, item in value.items():
            if names:
                _depth_and_refs(item, depth + 1, f"{where}.{key}")
                continue
            if key in _REFUSED_KEYWORDS:
                raise ValueError(
                    f"{where}.{key}: the keyword {key!r} is not taken in a client tool"
                )
            if key == "$ref" and not (isinstance(item, str) and item.startswith("#")):
                raise ValueError(f"{where}.$ref: only local references ('#/...') are taken")
            _depth_and_refs(item, depth + 1, f"{where}.{key}", key in _NAME_MAPS)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _depth_and_refs(item, depth + 1, f"{where}[{index}]")


def check_client_schema(schema: Any) -> dict[str, Any]:
    """`schema`, when it may be a client tool's parameters schema.

    Raises:
        ValueError: not a JSON object schema (`type: object`), larger than
            `MAX_CLIENT_TOOL_SCHEMA_BYTES`, deeper than `MAX_CLIENT_TOOL_SCHEMA_DEPTH`, a
            refused keyword or a non-local `$ref`, non-finite numbers, or not a valid
            JSON Schema; the message says which.
    """
    if not isinstance(schema, dict):
        raise ValueError("the parameters schema must be a JSON object")
    try:
        encoded = json.dumps(schema, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        raise ValueError("the parameters schema must be finite JSON") from None
    if len(encoded.encode("utf-8", "surrogatepass")) > MAX_CLIENT_TOOL_SCHEMA_BYTES:
        raise ValueError(
            f"the parameters schema is {len(encoded):,} characters as JSON; the limit is "
            f"{MAX_CLIENT_TOOL_SCHEMA_BYTES:,} bytes"
        )
    _depth_and_refs(schema, 0, "$")
    if schema.get("type") != "object":
        raise ValueError('the parameters schema must be an object schema ("type": "object")')
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise ValueError(
            f"the parameters schema is not a valid JSON Schema: {error.message}"
        ) from None
    return schema


class ClientTool(BaseModel):
    """A tool the run's client declares and runs: the model may call it, the run waits for
    the client's answer (a callback tool of this run only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """What the model calls: 1 to 64 ASCII letters, digits, `_` and `-`."""
    description: str = Field(default="", max_length=MAX_CLIENT_TOOL_DESCRIPTION_CHARS)
    """What the model reads to decide when to call it."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments (see `check_client_schema`)."""
    timeout_seconds: float = Field(
        default=3_600.0, gt=0, le=MAX_CLIENT_TOOL_TIMEOUT_SECONDS, allow_inf_nan=False
    )
    """How long the run waits for the client's answer to one call; then the model reads a
    timeout error."""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not PROVIDER_NAME_PATTERN.match(name):
            raise ValueError(
                "a client tool's name is 1 to 64 ASCII letters, digits, '_' and '-', "
                f"got {len(name)} characters"
            )
        return name

    @field_validator("description")
    @classmethod
    def _unicode(cls, description: str) -> str:
        try:
            description.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("the description is not valid Unicode (a lone surrogate)") from None
        return description

    @field_validator("parameters")
    @classmethod
    def _schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        return check_client_schema(schema)
