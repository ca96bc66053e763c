"""Context compaction: the model's context kept under its window (docs/compaction.md).

Only for runs with `AgentConfig.compaction`; a run without it schedules exactly what it
did before (so its recorded histories replay unchanged).

The decision is workflow code over workflow state: the size of the model's context after
its last call (the provider's reported input and output tokens, or the estimate of
`protocol._compaction` when it reported none) plus an estimate of the messages added
since. When that would pass the configured share of the window, the compact activity
summarises the older messages; its answer (the boundary and the summary) is recorded in
history, so a replay takes the same view. The view is state (`ModelUse.context`), sent
with every later model call; the snapshot chain keeps the whole transcript.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Literal

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from durable_tools._activities._types import (
    COMPACT_ACTIVITY,
    CONTEXT_TOO_LONG,
    CompactCall,
    Compacted,
)
from durable_tools.messages import Message, ModelResponse, ModelSettings, ToolDefinition
from durable_tools.protocol._compaction import (
    CHARS_PER_TOKEN,
    MAX_SUMMARY_CHARS,
    CompactionConfig,
    ContextView,
    estimate_message_tokens,
    estimate_tool_tokens,
)
from durable_tools.workflows.run._model_use import ModelUse
from durable_tools.workflows.run._replies import SUMMARY_INSTRUCTIONS, summary_text
from durable_tools.workflows.run._state import RunState

__all__ = ["compact_context", "context_too_long", "note_context", "prepare_context"]

Tools = Callable[[], list[ToolDefinition]]
"""The request's tool definitions, built only when an estimate needs them."""

_SHOWN_SUMMARY_CHARS = 2_000
"""Of the summary, the start the `context.compacted` event shows (the whole is an artifact)."""


def context_too_long(error: ActivityError) -> bool:
    """Whether a model activity failed because the provider found the input too long."""
    cause = error.cause
    return isinstance(cause, ApplicationError) and cause.type == CONTEXT_TOO_LONG


def _unsent(state: RunState) -> list[Message]:
    """The messages the next model call adds after the snapshot."""
    return state.conversation[state.snapshot_length - state.offset :]


def _projected(state: RunState, tools: Tools) -> int:
    """About how many tokens the next model call's input holds."""
    if state.snapshot_length == 0:  # the first call: nothing reported yet
        return estimate_tool_tokens(tools()) + estimate_message_tokens(state.conversation)
    return state.model.context_tokens + estimate_message_tokens(_unsent(state))


async def prepare_context(state: RunState, config: CompactionConfig, tools: Tools) -> int:
    """Compact when the next input would pass the threshold; its projected size after.

    Returns:
        About how many tokens the next model call's input holds (after any compaction).
    """
    projected = _projected(state, tools)
    window = config.window_tokens
    if window is None or projected <= config.threshold * window:
        return projected
    reason = (
        f"the next input would be about {projected:,} tokens, over {config.threshold:.0%} "
        f"of the {window:,}-token window"
    )
    after = await compact_context(state, config, tools, "threshold", reason, projected)
    return projected if after is None else after


def note_context(model: ModelUse, response: ModelResponse, projected: int) -> None:
    """After a model call: the size of the model's context, for the next decision."""
    usage = response.usage
    answer = estimate_message_tokens([response.message])
    if usage.input_tokens > 0:
        # What the provider counted, plus the answer (its reasoning is not sent back). A
        # custom adapter's odd output figures cannot make the context seem smaller.
        model.context_tokens = usage.input_tokens + max(
            answer, usage.output_tokens - usage.reasoning_tokens
        )
    else:
        model.context_tokens = max(projected, 0) + answer


async def compact_context(
    state: RunState,
    config: CompactionConfig,
    tools: Tools,
    trigger: Literal["threshold", "provider"],
    reason: str,
    projected: int,
) -> int | None:
    """Summarise the older messages into the run's context view.

    Returns:
        The next input's projected size, or None when nothing could be summarised (the
        last `keep_last` messages, or the tool results of one answer, are all there is).

    Raises:
        ApplicationError: the compact activity failed (the run fails with the reason).
    """
    total = state.offset + len(state.conversation)
    head = 1 if state.config.instructions else 0
    start = state.model.context.until if state.model.context is not None else head
    # The range ends inside the snapshot (only references cross into history) and before
    # the last `keep_last` messages.
    keep_from = min(total - config.keep_last, state.snapshot_length - 1)
    if state.snapshot is None or keep_from <= start or state.model.compaction_blocked_at == total:
        _skipped(state, total, f"{reason}; nothing older than the kept messages")
        return None
    window = config.window_tokens or 0
    call = CompactCall(
        model=config.summarizer_model or state.config.model,
        base=state.snapshot,
        base_length=state.snapshot_length,
        keep_from=keep_from,
        previous=state.model.context,
        instructions=SUMMARY_INSTRUCTIONS,
        settings=ModelSettings(max_output_tokens=config.summary_max_tokens),
        max_input_chars=max(1_000, window * CHARS_PER_TOKEN // 2),
        turn=state.model.compactions,
        run_id=workflow.info().workflow_id,
    )
    try:
        result: Compacted = await workflow.execute_activity(
            COMPACT_ACTIVITY,
            call,
            result_type=Compacted,
            start_to_close_timeout=timedelta(seconds=state.config.model_timeout_seconds),
            heartbeat_timeout=timedelta(seconds=state.config.model_heartbeat_seconds),
            retry_policy=RetryPolicy(maximum_attempts=state.config.model_max_attempts),
            summary=(
                f"compact context before turn {state.turn + 1}"
                if state.config.activity_summaries
                else None
            ),
        )
    except ActivityError as error:
        cause = error.cause
        detail = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
        raise ApplicationError(
            f"context compaction failed: {detail}", type="ModelError", non_retryable=True
        ) from error
    if result.until == 0:
        _skipped(state, total, f"{reason}; no boundary keeps each tool call with its result")
        return None
    first = state.model.context.until if state.model.context is not None else result.head
    problem = _refused(result, first, keep_from)
    if problem is not None:
        raise ApplicationError(
            f"the compact activity answered {problem}", type="ModelError", non_retryable=True
        )
    view = ContextView(
        head=result.head,
        until=result.until,
        summary=summary_text(result.summary, result.until - result.head),
    )
    state.model.context = view
    state.model.compactions += 1
    state.model.usage = state.model.usage + result.usage
    kept = result.kept_tokens + estimate_message_tokens([Message.user(view.summary)])
    state.model.context_tokens = kept + estimate_tool_tokens(tools())
    after = state.model.context_tokens + estimate_message_tokens(_unsent(state))
    state.event(
        "context.compacted",
        detail=(
            f"{reason}: summarised messages {first}-{result.until - 1} ({result.replaced} "
            f"new, about {result.tokens_replaced:,} tokens); next input about {after:,} tokens"
        ),
        details={
            "trigger": trigger,
            "first": first,
            "until": result.until,
            "messages": result.replaced,
            "summarised_total": result.until - result.head,
            "tokens_replaced": result.tokens_replaced,
            "tokens_before": projected,
            "tokens_after": after,
            "summarizer": call.model,
            "usage": result.usage.model_dump(),
            "summary": result.summary[:_SHOWN_SUMMARY_CHARS],
        },
        artifacts=[result.summary_ref] if result.summary_ref is not None else None,
    )
    return after


def _refused(result: Compacted, first: int, keep_from: int) -> str | None:
    """What is wrong with the compact activity's answer, or None when the workflow can
    take it. Checked here, not left to `ContextView`: a validation error in workflow code
    fails the workflow task again on every retry instead of failing the run once."""
    if not (0 <= result.head <= first < result.until <= keep_from):
        return f"a range ({first}-{result.until}) outside what was asked (up to {keep_from})"
    if len(result.summary) > MAX_SUMMARY_CHARS:
        return f"a summary of {len(result.summary):,} characters (at most {MAX_SUMMARY_CHARS:,})"
    sizes = (result.replaced, result.tokens_replaced, result.kept_tokens)
    figures = result.usage.model_dump().values()
    if min(*sizes, *figures) < 0:
        return "negative sizes or token counts"
    return None


def _skipped(state: RunState, total: int, detail: str) -> None:
    if state.model.compaction_blocked_at != total:
        state.model.compaction_blocked_at = total
        state.event("context.compaction_skipped", detail=detail)
