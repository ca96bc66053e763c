"""From whatever a tool returned to the bounded, redacted outcome the model reads.

The outcome is recorded in workflow history and resent to the model every turn, so
its size is bounded whatever the tool produced: a big output goes to an artifact
store and the model sees a head excerpt plus where the rest is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ._artifacts import ArtifactStore
from ._errors import ErrorKind, ToolError, ToolExecutionError, error_message_for_model
from ._results import ArtifactRef, ContentBlock, ToolOutcome, ToolResult
from ._scrub import REDACTED, scrub, scrub_value

__all__ = [
    "DEFAULT_LIMIT_BYTES",
    "abridge_arguments",
    "error_outcome",
    "finite_json",
    "format_result",
    "output_lost_outcome",
    "redact_arguments",
    "redact_value",
    "to_tool_result",
    "valid_text",
]

DEFAULT_LIMIT_BYTES = 16_000
"""Default bound on the text a tool call adds to the conversation."""


def valid_text(text: str) -> str:
    """`text` with unpaired UTF-16 surrogates replaced by U+FFFD.

    Such code points can come from a tool (or a model) through escaped JSON; no UTF-8
    payload can carry them, so one left in a result would fail its activity for good.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def finite_json(value: Any) -> Any:
    """`value` with each NaN or infinity replaced by the string `"NaN"`, `"Infinity"` or
    `"-Infinity"`, so that its JSON is JSON.

    A tool's result is not refused for such a number (the call has run, and the rest of
    its result is good), nor is the number made `null` (the model would read "no value"
    where there is one): the model reads what it was.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, Mapping):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(x) for x in value]
    return value


def _dumps(value: Any) -> str:
    return json.dumps(finite_json(value), ensure_ascii=False, separators=(", ", ": "))


def to_tool_result(value: Any) -> ToolResult:
    """Wrap a tool function's return value in a `ToolResult`.

    `ToolResult` passes as is; `str` becomes a text block; a pydantic model or any
    JSON-able value becomes `structured` plus a JSON block.

    Raises:
        ToolExecutionError: not retryable; the value cannot be converted to JSON.
    """
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=[ContentBlock(type="text", text=value)])
    if value is None:
        return ToolResult()
    try:
        if isinstance(value, BaseModel):
            data = value.model_dump(mode="json")
        else:
            data = to_jsonable_python(value)
        text = _dumps(data)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise ToolExecutionError(
            f"the tool returned a {type(value).__name__}, which cannot be converted to JSON",
            retryable=False,
            details={"exception_type": type(exc).__name__},
        ) from exc
    return ToolResult(content=[ContentBlock(type="json", data=data, text=text)], structured=data)


def redact_value(value: Any, names: Collection[str]) -> Any:
    """A copy of `value` where the values of keys named in `names` (at any depth,
    case-insensitively) are replaced by `[redacted]`."""
    if not names:
        return value
    lowered = {n.lower() for n in names}

    def walk(item: Any) -> Any:
        if isinstance(item, Mapping):
            return {k: REDACTED if str(k).lower() in lowered else walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(x) for x in item]
        return item

    return walk(value)


def redact_arguments(args: Mapping[str, Any], names: Collection[str]) -> dict[str, Any]:
    """Arguments with the named values redacted, for summaries, logs and approval records."""
    result = redact_value(dict(args), names)
    assert isinstance(result, dict)
    return result


def abridge_arguments(
    args: Mapping[str, Any], max_chars: int = 120, *, redact: Collection[str] = ()
) -> str:
    """A one-line summary of arguments for UIs: `city="Paris", days=3`, redacted and cut.

    Args:
        args: The arguments.
        max_chars: Longest summary; longer ones end with `…`.
        redact: Argument names whose values are hidden.
    """
    shown = redact_arguments(args, redact)
    parts = []
    for key, value in shown.items():
        try:
            rendered = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            rendered = repr(value)
        parts.append(f"{key}={rendered}")
    text = " ".join(", ".join(parts).split())
    if len(text) > max_chars:
        text = text[: max(0, max_chars - 1)] + "…"
    return text


def _render(result: ToolResult, redact: Collection[str]) -> str:
    parts: list[str] = []
    for block in result.content:
        if block.type == "json":
            parts.append(_dumps(redact_value(block.data, redact)))
        elif block.type == "artifact" and block.artifact is not None:
            ref = block.artifact
            parts.append(f"[artifact {ref.uri} ({ref.size} bytes, {ref.media_type})]")
        elif block.type == "image":
            where = f" {block.artifact.uri}" if block.artifact is not None else ""
            parts.append(f"[image{where}]")
        elif block.text is not None:
            parts.append(block.text)
    if not parts and result.structured is not None:
        parts.append(_dumps(redact_value(result.structured, redact)))
    return "\n".join(parts)


def _scrubbed(result: ToolResult, secrets: frozenset[str]) -> ToolResult:
    if not secrets:
        return result
    blocks = [
        block.model_copy(
            update={
                "text": scrub(block.text, secrets) if block.text is not None else None,
                "data": scrub_value(block.data, secrets),
            }
        )
        for block in result.content
    ]
    return result.model_copy(
        update={"content": blocks, "structured": scrub_value(result.structured, secrets)}
    )


def _head(text: str, budget: int) -> str:
    # Cut on a byte budget without splitting a UTF-8 sequence.
    return text.encode("utf-8")[: max(0, budget)].decode("utf-8", "ignore")


def format_result(
    result: ToolResult,
    *,
    call_id: str,
    tool_name: str,
    limit_bytes: int = DEFAULT_LIMIT_BYTES,
    store: ArtifactStore | None = None,
    redact: Collection[str] = (),
    attempt: int = 1,
    secrets: Iterable[str] = (),
) -> ToolOutcome:
    """Bound, redact and scrub a tool's result into the outcome recorded in the run.

    Args:
        result: What the tool returned.
        call_id: The model's id for the call.
        tool_name: The tool's name.
        limit_bytes: Most UTF-8 bytes of `content` (the notice about a cut included,
            for limits above a few hundred bytes).
        store: Where a full output over the limit is kept. Without one, the output is
            truncated and the rest is lost.
        redact: Key names whose values are replaced by `[redacted]` in structured data.
        attempt: The attempt that produced the result.
        secrets: Worker secret values, scrubbed (in every form `scrub` knows) from the
            content, the structured value and what goes to the store, before any cut.

    Returns:
        The outcome: `content` within the limit, `structured` only when its JSON fits.

    Raises:
        Exception: whatever `store.put` raises (a full or read-only disk). The tool has
            run by then: callers must not run it again (see `output_lost_outcome`).
    """
    found = frozenset(secrets)
    # Leaf strings first (a repr inside a JSON value is then found whatever JSON does to
    # it), then the rendered text once more.
    result = _scrubbed(result, found)
    text = valid_text(scrub(_render(result, redact), found))
    structured = finite_json(redact_value(result.structured, redact))
    structured_json = _dumps(structured) if structured is not None else None
    if structured_json is not None and valid_text(structured_json) != structured_json:
        structured, structured_json = None, None  # the text rendering above is kept
    artifacts: list[ArtifactRef] = list(result.artifacts)
    artifacts += [
        b.artifact for b in result.content if b.artifact is not None and b.artifact not in artifacts
    ]
    artifacts = [a.model_copy(update={"uri": scrub(a.uri, found)}) for a in artifacts]

    encoded = text.encode("utf-8")
    if len(encoded) > limit_bytes:
        if store is not None:
            media = "application/json" if text == structured_json else "text/plain; charset=utf-8"
            ref = store.put(encoded, media)
            artifacts.append(ref)
            notice = (
                f"\n\n[output truncated: showing the first {{shown}} of {ref.size} bytes. "
                f"The full output is stored as artifact {ref.uri} "
                f"(sha256 {ref.sha256}, {ref.media_type}); it is not in this conversation. "
                "Ask for a narrower result, or read the artifact with a tool that can.]"
            )
        else:
            notice = (
                f"\n\n[output truncated: showing the first {{shown}} of {len(encoded)} bytes; "
                "the rest was dropped. Ask for a narrower result.]"
            )
        budget = limit_bytes - len(notice.encode("utf-8")) - 8
        head = _head(text, budget)
        text = head + notice.format(shown=len(head.encode("utf-8")))

    if structured_json is not None and len(structured_json.encode("utf-8")) > limit_bytes:
        if store is not None:
            ref = store.put(structured_json.encode("utf-8"), "application/json")
            if ref not in artifacts:
                artifacts.append(ref)
        structured = None
    if not text and not result.is_error:
        text = "(the tool returned no output)"
    return ToolOutcome(
        call_id=call_id,
        tool_name=tool_name,
        content=text,
        is_error=result.is_error,
        structured=structured,
        artifacts=artifacts,
        elapsed_ms=result.elapsed_ms or 0.0,
        attempt=attempt,
        skipped=scrub(result.skipped, found) if result.skipped is not None else None,
    )


def output_lost_outcome(
    result: ToolResult,
    *,
    call_id: str,
    tool_name: str,
    reason: str,
    limit_bytes: int = DEFAULT_LIMIT_BYTES,
    redact: Collection[str] = (),
    attempt: int = 1,
    secrets: Iterable[str] = (),
) -> ToolOutcome:
    """The outcome of a call that completed but whose output could not be kept.

    The tool has run (its side effects happened), so the call is reported as completed,
    with `error_kind` `ToolOutputLost`, never as a failure to retry. The model reads that
    the call took effect, why its output is missing, and as much of the start of the
    output as fits, when that can still be rendered.

    Args:
        result: What the tool returned.
        call_id: The model's id for the call.
        tool_name: The tool's name.
        reason: Why the output could not be kept (scrubbed here).
        limit_bytes: Most UTF-8 bytes of `content`.
        redact: Key names whose values are redacted in the excerpt.
        attempt: The attempt that produced the result.
        secrets: Worker secret values to scrub.
    """
    found = frozenset(secrets)
    notice = (
        f"Tool call {call_id} to {tool_name!r} completed, but its output could not be kept: "
        f"{scrub(reason, found)}. The call took effect: do not call it again only to see "
        "its output."
    )
    notice = _head(notice, limit_bytes)
    excerpt = ""
    try:
        text = valid_text(scrub(_render(_scrubbed(result, found), redact), found))
    except Exception:  # the excerpt is a courtesy; the notice alone is the answer
        text = ""
    budget = limit_bytes - len(notice.encode("utf-8")) - 80
    if text and budget > 0:
        head = _head(text, budget)
        cut = "" if len(head) == len(text) else " (the rest is lost)"
        excerpt = f"\n\nThe start of its output{cut}:\n{head}"
    return ToolOutcome(
        call_id=call_id,
        tool_name=tool_name,
        content=notice + excerpt,
        error_kind=ErrorKind.OUTPUT_LOST.value,
        elapsed_ms=result.elapsed_ms or 0.0,
        attempt=attempt,
    )


def error_outcome(
    call_id: str, tool_name: str, error: ToolError, *, attempt: int = 1, elapsed_ms: float = 0.0
) -> ToolOutcome:
    """The outcome of a failed call, with the model-facing message and the error kind."""
    return ToolOutcome(
        call_id=call_id,
        tool_name=tool_name,
        content=error_message_for_model(call_id, tool_name, error),
        is_error=True,
        error_kind=error.kind.value,
        attempt=attempt,
        elapsed_ms=elapsed_ms,
    )
