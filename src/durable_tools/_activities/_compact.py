"""The compact activity: older messages of a conversation summarised by a model call.

The workflow decides *that* the model's context must shrink (from its own state, see
`workflows/loop/_compaction.py`); this activity decides *where* the summarised range ends
and asks the summariser for the summary. It reads the whole conversation from the
snapshot chain, so nothing but references crosses into history, and the snapshot chain
itself is left as it is: the whole transcript stays readable (`AgentRun.conversation()`).

Where the range ends: the messages from the boundary on are sent as they are, so the
boundary keeps at least the run's last `keep_last` messages and never separates a tool
call from its result (a provider refuses a result whose call it was not sent). The
snapshot always ends with a model answer, which is always kept, so the results that
follow it (not yet in the snapshot) keep their call too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_tools._activities._conversation import ConversationSnapshots, SnapshotMissing
from durable_tools._activities._types import (
    COMPACT_ACTIVITY,
    SNAPSHOT_MISSING,
    CompactCall,
    Compacted,
)
from durable_tools.messages import Message, ModelRequest
from durable_tools.models import resolve_model
from durable_tools.protocol._compaction import MAX_SUMMARY_CHARS, estimate_message_tokens
from durable_tools.tools._artifacts import ArtifactStore
from durable_tools.tools._formatting import valid_text

__all__ = ["compact_activity", "render_transcript", "summary_boundary"]

SUMMARY_MEDIA_TYPE = "text/markdown"

# One message of the transcript is shown up to this long (its start and its end).
_MAX_MESSAGE_CHARS = 4_000


def summary_boundary(conversation: Sequence[Message], start: int, last: int) -> int | None:
    """The largest index in `(start, last]` where the kept messages may begin, or None.

    A boundary is valid when no tool result at or after it answers a call before it: the
    messages from it up to the next assistant message hold no tool result.

    Args:
        conversation: The whole conversation (as far as the snapshot holds it).
        start: The first message the summary would cover.
        last: The highest boundary allowed (keeps the last messages).
    """
    last = min(last, len(conversation) - 1)  # the snapshot's last answer is always kept
    for boundary in range(last, start, -1):
        for index in range(boundary, len(conversation)):
            message = conversation[index]
            if message.role == "tool":
                break  # a result whose call would be summarised away
            if message.role == "assistant":
                return boundary
    return None


def _clip_middle(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    keep = limit - 80
    head = keep * 3 // 4
    tail = keep - head
    return f"{text[:head]}\n[... {len(text) - head - tail:,} {what} left out ...]\n{text[-tail:]}"


def _line(index: int, message: Message) -> str:
    content = _clip_middle(message.content or "", _MAX_MESSAGE_CHARS, "characters")
    if message.role == "tool":
        failed = " (failed)" if message.is_error else ""
        head = f"[{index}] result of {message.name or 'a tool'} call {message.tool_call_id}{failed}"
        return f"{head}:\n{content}"
    text = f"[{index}] {message.role}:" + (f"\n{content}" if content else "")
    for call in message.tool_calls:
        arguments = _clip_middle(call.arguments, _MAX_MESSAGE_CHARS // 4, "characters")
        text += f"\n  calls {call.name} (call {call.id}) with {arguments}"
    return text


def render_transcript(
    previous: str | None, messages: Sequence[Message], first: int, max_chars: int
) -> str:
    """The text the summariser reads: the previous summary, then each message numbered.

    Each message is cut to its start and end past a few thousand characters, and the
    whole transcript to `max_chars` (its middle goes), so the summariser's own context
    window is not passed by the very conversation that outgrew the agent's.
    """
    parts = []
    if previous:
        parts.append(f"The summary so far:\n{previous}\n\nThe messages since:")
    else:
        parts.append("The messages:")
    parts += [_line(first + offset, message) for offset, message in enumerate(messages)]
    return _clip_middle("\n\n".join(parts), max_chars, "characters of the transcript")


def compact_activity(
    snapshots: ConversationSnapshots,
    store: ArtifactStore,
    heartbeating: Callable[[Any], Any],
) -> Callable[..., Any]:
    """The `durable_tools.compact` activity over a worker's snapshots and artifact store.

    Args:
        snapshots: The model activity's snapshot reader (its cache is shared).
        store: Where the whole summary is kept for the audit event.
        heartbeating: Awaits a model call while heartbeating (the model activity's).
    """

    @activity.defn(name=COMPACT_ACTIVITY)
    async def compact(call: CompactCall) -> Compacted:
        try:
            adapter = resolve_model(call.model)
        except ValueError as error:
            raise ApplicationError(str(error), type="ModelError", non_retryable=True) from None
        try:
            whole = snapshots.cached(call.base, call.base_length)
            if whole is None:
                whole = await asyncio.to_thread(snapshots.load, call.base, call.base_length)
        except SnapshotMissing as error:
            raise ApplicationError(str(error), type=SNAPSHOT_MISSING, non_retryable=True) from None
        head = 0
        while head < len(whole) and whole[head].role == "system":
            head += 1
        previous = call.previous
        start = max(head, previous.until if previous is not None else head)
        until = summary_boundary(whole, start, call.keep_from)
        if until is None:
            return Compacted(head=head)  # nothing may be summarised without splitting
        replaced = whole[start:until]
        transcript = render_transcript(
            previous.summary if previous is not None else None,
            replaced,
            start,
            call.max_input_chars,
        )
        request = ModelRequest(
            model=call.model,
            messages=[Message.system(call.instructions), Message.user(transcript)],
            turn=call.turn,
            run_id=call.run_id,
            settings=call.settings,
        )
        response = await heartbeating(adapter.complete(request))
        summary = valid_text(response.message.content or "").strip()
        if not summary:
            raise ApplicationError(
                f"the summariser ({call.model}) answered without text", type="CompactionFailed"
            )
        summary = _clip_middle(summary, MAX_SUMMARY_CHARS, "characters of the summary")
        try:
            ref = await asyncio.to_thread(store.put, summary.encode(), SUMMARY_MEDIA_TYPE)
        except Exception:  # the audit copy only: the summary itself is in the result
            activity.logger.warning("could not store the summary in the artifact store")
            ref = None
        return Compacted(
            head=head,
            until=until,
            summary=summary,
            replaced=len(replaced),
            tokens_replaced=estimate_message_tokens(replaced),
            kept_tokens=estimate_message_tokens([*whole[:head], *whole[until:]]),
            usage=response.usage,
            summary_ref=ref,
        )

    return compact
