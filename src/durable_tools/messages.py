"""The conversation as data: messages, tool calls, and what model adapters take and return.

These types cross the wire between the agent workflow and the model activity, so they
are pydantic models with JSON-able fields only. Tool call arguments stay the raw
text the model produced: parsing is validation's job, and malformed JSON must reach it.

`Message` and `ToolCall`, which results carry, are exported by the top-level
`durable_tools`; this module lists what a model adapter takes and returns.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, field_validator

from durable_tools._wire import WireModel

__all__ = [
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "NamedToolChoice",
    "OutputSchema",
    "ToolDefinition",
    "Usage",
]


class ToolCall(WireModel):
    """One call the model asked for."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """The model's call id; every result or error about the call carries it back."""
    name: str
    """The tool name as the model wrote it."""
    arguments: str = "{}"
    """The arguments exactly as the model wrote them: JSON text, possibly malformed."""


Role = Literal["system", "user", "assistant", "tool"]


class Message(WireModel):
    """One entry of the conversation, in the shape of OpenAI's Chat Completions API."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Set on assistant messages that call tools."""
    tool_call_id: str | None = None
    """Set on tool messages: the call this result answers."""
    name: str | None = None
    """On tool messages, the tool's name."""
    is_error: bool | None = None
    """On tool messages: True when the call failed, was refused, skipped or invalid. Kept
    for the run's own records; model adapters do not send it to providers."""
    at: datetime | None = None
    """On tool messages: when the result was made (workflow time). Not sent to providers."""

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)

    @classmethod
    def tool(
        cls,
        call_id: str,
        name: str,
        content: str,
        *,
        is_error: bool | None = None,
        at: datetime | None = None,
    ) -> Message:
        return cls(
            role="tool",
            tool_call_id=call_id,
            name=name,
            content=content,
            is_error=is_error,
            at=at,
        )


class ToolDefinition(BaseModel):
    """What a model is told about one tool."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    strict: bool = False


class NamedToolChoice(BaseModel):
    """Force the model to call this one tool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)


_OWNED_FIELDS = frozenset({"model", "messages", "input", "system", "tools", "stream"})
"""Request fields an adapter builds from the conversation; `extra` may not replace them
(a `stream` would also change the answer's shape)."""


class ModelSettings(BaseModel):
    """How the model should answer: sampling, length, tool choice, reasoning.

    Every field left unset is not sent, so the provider's own default applies. Each
    adapter maps the fields to its provider's names (see docs/models.md); `extra` is
    merged into the request body as it is, for provider-specific parameters.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_output_tokens: int | None = Field(default=None, ge=1)
    """Most tokens one answer may have (reasoning tokens included where the provider
    counts them there)."""
    tool_choice: Literal["auto", "required", "none"] | NamedToolChoice | None = None
    """`auto` (the model decides), `required` (some tool), `none` (no tool), or
    `{"name": ...}` (that tool)."""
    parallel_tool_calls: bool | None = None
    """False asks for at most one tool call per answer."""
    stop: tuple[str, ...] = Field(default=(), max_length=16)
    """Sequences that end the answer."""
    seed: int | None = None
    """For providers that sample reproducibly with one (OpenAI); others ignore it."""
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    """Provider-specific parameters merged into the request body, e.g. `{"top_p": 0.9}`."""

    @field_validator("extra")
    @classmethod
    def _not_owned(cls, extra: dict[str, Any]) -> dict[str, Any]:
        owned = sorted(_OWNED_FIELDS.intersection(extra))
        if owned:
            raise ValueError(
                f"extra may not set {', '.join(owned)}: the adapter sends those itself"
            )
        return extra

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with the fields `override` sets replacing them (`extra` merged
        key by key)."""
        if override is None:
            return self
        update = {name: getattr(override, name) for name in override.model_fields_set}
        update["extra"] = {**self.extra, **override.extra}
        return self.model_copy(update=update)


MAX_OUTPUT_SCHEMA_CHARS = 100_000
"""Largest output schema (as JSON text): it travels with every model request of a run."""


class OutputSchema(BaseModel):
    """The JSON schema a run's final answer must match (structured output).

    A Python type cannot cross the wire to the workflow, so a run carries its schema; the
    client that knows the type turns the validated answer back into it. Build one with
    `OutputSchema.of(SomeModel)`, or give the type (or a JSON schema dict) to
    `AgentConfig(output_type=...)`, which does the same.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """Names the schema for the provider (OpenAI's `json_schema.name`) and in the timeline."""
    json_schema: dict[str, Any]
    """A JSON Schema (Draft 2020-12) of an object: every provider's structured output and
    final-answer tool take an object."""
    description: str | None = Field(default=None, max_length=4_000)
    """Told to the model with the schema."""
    strict: bool = False
    """Ask the provider to enforce the schema while generating (OpenAI's `strict`). The
    schema must then be in the provider's strict subset (every property required, no
    additional properties); the answer is validated in the workflow either way."""
    mode: Literal["auto", "native", "tool"] = "auto"
    """How the schema reaches the model: `native` (the provider's structured output:
    OpenAI's `response_format` / `text.format`, Anthropic's `output_config`), `tool` (a
    `final_answer` tool the model calls with its answer), or `auto` (native for
    `openai`, `openai-responses` and `scripted` models, the tool for the others)."""

    _python_type: Any = PrivateAttr(default=None)

    @field_validator("json_schema")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            size = len(json.dumps(schema))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the output schema is not JSON: {exc}") from None
        if size > MAX_OUTPUT_SCHEMA_CHARS:
            raise ValueError(
                f"the output schema is {size:,} characters, over {MAX_OUTPUT_SCHEMA_CHARS:,}"
            )
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            problem = f"the output schema is not a valid JSON Schema: {exc.message}"
            raise ValueError(problem) from None
        if schema.get("type") != "object":
            raise ValueError(
                'the output schema must describe an object ("type": "object"): providers '
                "take structured output and tool arguments as objects"
            )
        return schema

    @property
    def python_type(self) -> Any:
        """The Python type this schema was made from, in the process that made it (never
        sent over the wire); None for a schema given as a dict or received."""
        return self._python_type

    @classmethod
    def of(
        cls,
        output_type: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool = False,
        mode: Literal["auto", "native", "tool"] = "auto",
    ) -> OutputSchema:
        """The schema of a Python type (a pydantic model, dataclass or TypedDict) or a
        JSON schema dict.

        Args:
            output_type: The type of the final answer, or its JSON schema.
            name: Default: the type's name, or the schema's `title`, else `output`.
            description: Default: the schema's `description`.
            strict: See the field.
            mode: See the field.

        Raises:
            ValueError: The type has no JSON schema, or it is not an object schema.
        """
        python_type = None
        if isinstance(output_type, dict):
            schema = output_type
        else:
            try:
                schema = TypeAdapter(output_type).json_schema()
            except Exception as exc:  # pydantic raises several kinds for unsupported types
                raise ValueError(f"{output_type!r} has no JSON schema: {exc}") from None
            python_type = output_type
        title = name or schema.get("title") or getattr(output_type, "__name__", None) or "output"
        found = description if description is not None else schema.get("description")
        made = cls(
            name=re.sub(r"[^A-Za-z0-9_-]", "_", str(title))[:64],
            json_schema=schema,
            description=found if isinstance(found, str) else None,
            strict=strict,
            mode=mode,
        )
        made._python_type = python_type
        return made

    @classmethod
    def coerce(cls, value: Any) -> Any:
        """`AgentConfig(output_type=...)`'s input as an `OutputSchema`: a type or a JSON
        schema dict is converted; a dumped `OutputSchema` (how one crosses the wire) and
        anything else are left for validation."""
        if value is None or isinstance(value, OutputSchema):
            return value
        if isinstance(value, dict):
            return value if "json_schema" in value else cls.of(value)
        if isinstance(value, type) or hasattr(value, "__origin__"):
            return cls.of(value)
        return value


class ModelRequest(WireModel):
    """Input of one model call."""

    model: str
    """Adapter and model, e.g. `scripted:/path/steps.json` or `openai:gpt-4o-mini`."""
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    turn: int = 0
    """0-based index of this model call within the run (scripted models answer by it)."""
    run_id: str = ""
    settings: ModelSettings | None = None
    """Sampling and tool-choice settings; None sends none (the provider's defaults)."""
    output: OutputSchema | None = None
    """The schema the answer must match, for an adapter to pass to its provider's native
    structured output; None: a free-text answer (or a `final_answer` tool among `tools`)."""


class Usage(BaseModel):
    """Token counts, when the provider reports them."""

    input_tokens: int = 0
    """All input tokens of the call, cached ones included."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Of `input_tokens`, those read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Of `input_tokens`, those written to the provider's prompt cache (Anthropic)."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those spent reasoning (OpenAI reports them)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class ModelResponse(WireModel):
    """Output of one model call: an assistant message, with or without tool calls."""

    message: Message
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
