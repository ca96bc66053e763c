"""Structured final output: the schema sent to the model, and its answer validated.

With `AgentConfig.output_type`, the final answer must be a JSON object that matches the
schema. The model learns the schema in one of two ways (`OutputSchema.mode`):

- native: the adapter passes it to the provider's structured output (OpenAI's
  `response_format`, the Responses API's `text.format`, Anthropic's `output_config`), and
  the answer is the text of a message without tool calls;
- tool: a `final_answer` tool whose parameters are the schema is offered beside the
  run's tools, and the answer is its arguments (the way for providers that cannot be
  given a schema while tools are offered, and for adapters without native support).

The answer is validated here, in the workflow (JSON Schema validation is deterministic):
an invalid one is given back to the model with the validation errors, at most
`AgentConfig.output_retries` times, and one more ends the run `failed` with the errors.
Every answer, valid or not, gets a `final_answer` line in the timeline. Nothing here
runs for a run without `output_type`, so older histories replay unchanged.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from durable_tools.messages import Message, OutputSchema, ToolCall, ToolDefinition
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import AgentConfig, RunStatus
from durable_tools.tools import InvalidArguments
from durable_tools.tools._validation import (
    format_schema_errors,
    parse_arguments,
    schema_validator,
)
from durable_tools.workflows.run._replies import final_answer_repair_reply
from durable_tools.workflows.run._state import EndRun, RunState

__all__ = [
    "FINAL_ANSWER_TOOL",
    "NATIVE_OUTPUT_PREFIXES",
    "accept_final_calls",
    "accept_text",
    "check_answer",
    "native_output",
    "output_mode",
    "output_tools",
    "split_final_calls",
]

FINAL_ANSWER_TOOL = "final_answer"
"""The tool a model calls with its final answer when the schema travels as a tool."""

NATIVE_OUTPUT_PREFIXES = frozenset({"scripted", "openai", "openai-responses"})
"""Model spec prefixes whose adapters take the schema natively in `auto` mode. Anthropic
is not among them: its structured output cannot be combined with forcing a tool, and a
final-answer tool works with every model it serves."""

MAX_ANSWER_CHARS = PAYLOAD_BUDGET_BYTES // 4
"""Longest final answer accepted: the value and its text both go into the run's result,
which must fit one payload."""

_MAX_ERROR_LINES = 10
_MAX_LINE_CHARS = 300


def output_mode(config: AgentConfig) -> Literal["native", "tool"] | None:
    """How the run's output schema reaches the model; None without `output_type`."""
    schema = config.output_type
    if schema is None:
        return None
    if schema.mode != "auto":
        return schema.mode
    prefix = config.model.partition(":")[0]
    return "native" if prefix in NATIVE_OUTPUT_PREFIXES else "tool"


def native_output(config: AgentConfig) -> OutputSchema | None:
    """The schema for `ModelRequest.output`: set only in native mode."""
    return config.output_type if output_mode(config) == "native" else None


def output_tools(state: RunState) -> list[ToolDefinition]:
    """The `final_answer` tool to offer in tool mode (none otherwise).

    Raises:
        EndRun: A tool of the catalog is named `final_answer`: the model's call could
            not be told apart from its answer.
    """
    schema = state.config.output_type
    if schema is None or output_mode(state.config) != "tool":
        return []
    if any(spec.name == FINAL_ANSWER_TOOL for spec in state.catalog.specs):
        raise EndRun(
            RunStatus.FAILED,
            f"a tool named {FINAL_ANSWER_TOOL!r} clashes with the structured output tool: "
            "rename the tool, or use mode='native' in the output schema",
        )
    about = f"Give your final answer ({schema.name}): call this once, when you are done, "
    about += "with the answer as the arguments. Do not answer in text."
    if schema.description:
        about += "\n\n" + schema.description
    return [
        ToolDefinition(
            name=FINAL_ANSWER_TOOL,
            description=about,
            parameters=schema.json_schema,
            strict=schema.strict,
        )
    ]


def split_final_calls(
    config: AgentConfig, calls: list[ToolCall]
) -> tuple[list[ToolCall], list[ToolCall]]:
    """The turn's `final_answer` calls (tool mode only) and its other calls."""
    if output_mode(config) != "tool":
        return [], calls
    finals = [call for call in calls if call.name == FINAL_ANSWER_TOOL]
    return finals, [call for call in calls if call.name != FINAL_ANSWER_TOOL]


def check_answer(schema: OutputSchema, raw: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The answer parsed and validated: `(value, [])`, or `(None, problems)`."""
    if len(raw) > MAX_ANSWER_CHARS:
        return None, [
            f"$: the answer is {len(raw):,} characters, over the limit of "
            f"{MAX_ANSWER_CHARS:,}: give a shorter answer"
        ]
    try:
        value = parse_arguments(_unfenced(raw))
    except InvalidArguments as error:
        return None, error.errors or [error.message]
    validator = schema_validator(f"output:{schema.name}", schema.json_schema)
    problems = format_schema_errors(validator.iter_errors(value))
    return (None, problems) if problems else (value, [])


def _unfenced(text: str) -> str:
    """The text without a Markdown code fence around it (```json ... ```), which some
    models add even when asked for JSON only."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and "\n" in stripped:
        return stripped[stripped.index("\n") + 1 : -3]
    return text


def accept_text(state: RunState, message: Message) -> bool:
    """Take a message without tool calls as the final answer, if it is a valid one.

    Returns:
        True when the answer is valid (the run ends with it); False when the model was
        asked to repair it (a user message was added to the conversation).

    Raises:
        EndRun: The answer is invalid and the repairs allowed are used up.
    """
    schema = state.config.output_type
    assert schema is not None
    text = message.content or ""
    value, problems = check_answer(schema, text)
    call_id = f"output-{state.turn}"
    if value is not None:
        _accept(state, call_id, value)
        return True
    _reject(state, call_id, text, problems)
    if output_mode(state.config) == "tool":
        request = (
            f"Give your final answer by calling the `{FINAL_ANSWER_TOOL}` tool with arguments "
            "that match its schema; a text answer is not taken."
        )
        if text.lstrip().startswith(("{", "```")):
            request += "\n" + _listing(schema, problems)
    else:
        request = (
            _listing(schema, problems)
            + "\nAnswer again with only the corrected JSON object, nothing around it."
        )
    state.conversation.append(Message.user(request))
    return False


def accept_final_calls(state: RunState, finals: list[ToolCall]) -> bool:
    """Take the first valid `final_answer` call of a turn as the final answer.

    Returns:
        True when one is valid (the run ends with it); False when the model was told
        what was wrong with each (tool messages under their call ids).

    Raises:
        EndRun: Every call is invalid and the repairs allowed are used up.
    """
    schema = state.config.output_type
    assert schema is not None
    checked = [(call, *check_answer(schema, call.arguments)) for call in finals]
    for call, value, _ in checked:
        if value is not None:
            _accept(state, call.id, value)
            return True
    for index, (call, _, problems) in enumerate(checked):
        # One turn's invalid calls are one invalid answer: counted once.
        _reject(state, call.id, call.arguments, problems, count=index == len(checked) - 1)
    state.conversation.extend(
        final_answer_repair_reply(call.id, FINAL_ANSWER_TOOL, _listing(schema, problems))
        for call, _, problems in checked
    )
    return False


def _listing(schema: OutputSchema, problems: list[str]) -> str:
    shown = [_clip(line) for line in problems[:_MAX_ERROR_LINES]]
    more = len(problems) - len(shown)
    count = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
    text = f"Your answer does not match the output schema `{schema.name}` ({count}):\n"
    text += "\n".join(f"- {line}" for line in shown)
    if more:
        text += f"\n- ... and {more} more"
    return text


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LINE_CHARS else text[:_MAX_LINE_CHARS] + "..."


def _record(
    state: RunState, call_id: str, raw: str, status: Literal["completed", "invalid"], result: str
) -> None:
    state.timeline.append(
        ToolCallRecord(
            call_id=call_id[:64],
            tool=FINAL_ANSWER_TOOL,
            turn=state.turn,
            arguments=raw[:160],
            status=status,
            result=result[:300],
            error_kind="invalid_arguments" if status == "invalid" else None,
        )
    )


def _accept(state: RunState, call_id: str, value: dict[str, Any]) -> None:
    schema = state.config.output_type
    assert schema is not None
    text = json.dumps(value, ensure_ascii=False)
    _record(state, call_id, text, "completed", f"valid {schema.name}")
    state.event(
        "output.accepted",
        call_id=call_id[:64],
        tool=FINAL_ANSWER_TOOL,
        detail=f"the final answer matches {schema.name}",
    )
    state.output = value
    state.final_answer = text


def _reject(
    state: RunState, call_id: str, raw: str, problems: list[str], *, count: bool = True
) -> None:
    """Record an invalid answer, and end the run once the repairs allowed are used up.

    Several invalid `final_answer` calls of one turn count as one answer (`count`).
    """
    schema = state.config.output_type
    assert schema is not None
    first = _clip(problems[0]) if problems else "invalid"
    _record(state, call_id, raw, "invalid", "; ".join(_clip(p) for p in problems[:3]))
    state.event("output.invalid", call_id=call_id[:64], tool=FINAL_ANSWER_TOOL, detail=first)
    if not count:
        return
    allowed = state.config.output_retries
    if state.output_repairs >= allowed:
        raise EndRun(
            RunStatus.FAILED,
            f"the final answer does not match the output schema {schema.name!r}"
            + (f" after {allowed} repair(s)" if allowed else "")
            + f": {first}",
        )
    state.output_repairs += 1
