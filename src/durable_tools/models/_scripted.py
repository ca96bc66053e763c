"""A model that plays back a script: deterministic runs for tests, demos and benchmarks.

The script is a JSON file `{"steps": [...]}`; step `i` answers model call `i` of a run
(`ModelRequest.turn`), whatever the conversation says. A step is

    {"tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": "x"}}]}
    {"text": "final answer"}

or both. Dict arguments become JSON text; string arguments are passed through verbatim, so
a script can feed malformed JSON to the workflow's validation.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from ._errors import ModelError

__all__ = ["Script", "ScriptedModel", "ScriptedStep", "ScriptedToolCall", "load_script"]


class ScriptedToolCall(BaseModel):
    """One tool call a step makes."""

    # Unknown keys are typos (`"args"`, `"tool"`): refuse them rather than ignore them.
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    """The call id; `call_<turn>_<index>` when missing, so replays see the same ids."""
    name: str = Field(min_length=1)
    """The tool the model calls."""
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """A JSON object, serialized for the model; or raw text, passed through verbatim."""


class ScriptedUsage(BaseModel):
    """Token counts to report, for tests of usage accounting."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class ScriptedStep(BaseModel):
    """What the model answers at one turn."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    """The assistant's text; a step with text and no tool calls ends the run."""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    """The tool calls of this turn."""
    finish_reason: str | None = None
    """Defaults to `tool_calls` when the step calls tools, else `stop`."""
    usage: ScriptedUsage = Field(default_factory=ScriptedUsage)
    """Reported token counts; zero unless the script says otherwise."""

    @model_validator(mode="after")
    def _says_something(self) -> ScriptedStep:
        # An empty step is almost surely a mistake in the script, and would otherwise
        # surface later as a confusing empty final answer.
        if self.text is None and not self.tool_calls:
            raise ValueError("a step needs `text`, `tool_calls`, or both")
        return self


class Script(BaseModel):
    """A whole script file."""

    model_config = ConfigDict(extra="forbid")

    steps: list[ScriptedStep] = Field(min_length=1)
    """Step `i` answers turn `i`."""


# Keyed by resolved path; the mtime and size guard against edits between runs.
_cache: dict[str, tuple[int, int, Script]] = {}
_cache_lock = threading.Lock()


def _fail(path: str, problem: str) -> ModelError:
    # A broken script fails the same way on every attempt: retrying only hides it.
    return ModelError(f"scripted model {path}: {problem}", retryable=False)


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script file, cached by (path, mtime).

    Args:
        path: The JSON file; relative paths resolve against the working directory.

    Returns:
        The parsed script.

    Raises:
        ModelError: Non-retryable, naming the path and what is wrong with the file.
    """
    shown = os.fspath(path)
    resolved = str(Path(path).resolve())
    try:
        stat = os.stat(resolved)
    except FileNotFoundError:
        raise _fail(shown, "file not found") from None
    except OSError as exc:
        raise _fail(shown, f"cannot read file: {exc.strerror or exc}") from None
    with _cache_lock:
        cached = _cache.get(resolved)
    if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
        return cached[2]
    try:
        raw = Path(resolved).read_bytes()
    except OSError as exc:
        raise _fail(shown, f"cannot read file: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _fail(shown, f"not valid JSON: {exc}") from None
    try:
        script = Script.model_validate(data)
    except ValidationError as exc:
        raise _fail(shown, f"wrong shape: {_describe(exc)}") from None
    with _cache_lock:
        _cache[resolved] = (stat.st_mtime_ns, stat.st_size, script)
    return script


def _describe(exc: ValidationError) -> str:
    """One line per problem, each with its location in the file (`steps.0.tool_calls`)."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


class ScriptedModel:
    """A model adapter answering each turn with the matching step of a script file.

    Args:
        path: The script file. It is read on each call (through a cache), so a test may
            write the file after building the adapter.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    def __repr__(self) -> str:
        return f"ScriptedModel({self.path!r})"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with step `request.turn` of the script.

        Raises:
            ModelError: Non-retryable, when the file is broken or has no step for the turn.
        """
        script = load_script(self.path)
        turn = request.turn
        if not 0 <= turn < len(script.steps):
            raise _fail(
                self.path,
                f"no step for turn {turn}: the script has {len(script.steps)} step(s) "
                f"(turns 0-{len(script.steps) - 1})",
            )
        step = script.steps[turn]
        calls = [
            ToolCall(
                id=call.id if call.id is not None else f"call_{turn}_{index}",
                name=call.name,
                arguments=(
                    call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments, ensure_ascii=False)
                ),
            )
            for index, call in enumerate(step.tool_calls)
        ]
        return ModelResponse(
            message=Message(role="assistant", content=step.text, tool_calls=calls),
            finish_reason=step.finish_reason or ("tool_calls" if calls else "stop"),
            usage=Usage(
                input_tokens=step.usage.input_tokens, output_tokens=step.usage.output_tokens
            ),
        )
