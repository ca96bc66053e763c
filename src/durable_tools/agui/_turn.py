"""One AG-UI run: a session message (or a resumed approval) followed until its answer or
until it needs the user, as AG-UI events.

The session's run is the truth; this is a view of it, read from outside with the client's
own APIs, never from the request: the run's token stream (`AgentRun.stream()`) gives the
model's text per turn, its audit events (`events_since`) say when a tool call moved, its
timeline (`timeline()`) says with what arguments and result, its status (`status()`)
what it waits for. A connection that drops loses the view, never the run.

Mapping:

| the run | AG-UI |
|---|---|
| a model turn (`turn` of its stream and its calls) | `STEP_STARTED` / `STEP_FINISHED` `turn N` |
| a streamed model message's text | `TEXT_MESSAGE_START` / `_CONTENT` / `_END` |
| a tool call (its timeline record; arguments as shown: redacted, abridged) | `TOOL_CALL_*` |
| its outcome (completed, failed, denied, ...) | `TOOL_CALL_RESULT` |
| what it waits for (approvals, authorizations, questions, callbacks) | `STATE_SNAPSHOT` |
| an approval the user may decide alone | `RUN_FINISHED` with an `interrupt` outcome |
| the message's answer | `RUN_FINISHED` (`result`: answer and status) |
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from durable_tools._callers._auth import decider_for
from durable_tools._callers._tokens import User
from durable_tools.agui._input import authorization_interrupt_id, interrupt_id
from durable_tools.client import AgentRun, SentMessage
from durable_tools.protocol._callback_types import PendingCallback
from durable_tools.protocol._deciders import name_key, person_of
from durable_tools.protocol._session_types import SessionReply
from durable_tools.streaming import StreamEvent
from durable_tools.workflows import PendingApproval, RunSnapshot, ToolCallRecord

__all__ = [
    "CLEANUP_SECONDS",
    "CURSOR_PREFIX",
    "FINAL_TEXT_GRACE",
    "MAX_CURSOR_CHARS",
    "TurnView",
    "decidable_by",
    "follow_turn",
    "open_calls",
    "run_error",
]

FINAL_TEXT_GRACE = 3.0
"""Seconds the last streamed text may take to arrive after the answer is there."""

CLEANUP_SECONDS = 5.0
"""How long an ended AG-UI run waits for its watchers to stop."""

CURSOR_PREFIX = "c1."
"""How the endpoint's event ids (rejoin cursors) start."""

MAX_CURSOR_CHARS = 4_000
"""Longest event id given (and taken back): past it an event has none, and a client
rejoins by sending its message again (the answer comes whole)."""

_MAX_CURSOR_ITEMS = 256


class _Cursor(BaseModel):
    """A rejoin cursor's content, each field bounded (a client sends it back)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    b: int = Field(ge=0, le=1_000_000)
    s: int | None = Field(default=None, ge=0, le=1_000_000)
    o: str | None = Field(default=None, max_length=64)
    t: dict[str, int] = Field(default_factory=dict, max_length=_MAX_CURSOR_ITEMS)
    e: list[int] = Field(default_factory=list, max_length=_MAX_CURSOR_ITEMS)
    c: list[str] = Field(default_factory=list, max_length=_MAX_CURSOR_ITEMS)
    r: list[str] = Field(default_factory=list, max_length=_MAX_CURSOR_ITEMS)


def _turns_of(shown: dict[str, int]) -> Iterator[int]:
    """The turns of text message ids `turn-N-...` (others are ignored)."""
    for ident in shown:
        parts = ident.split("-")
        if len(parts) == 3 and parts[0] == "turn" and parts[1].isdigit():
            yield int(parts[1])


_OPEN_STATUSES = frozenset(
    {"awaiting_approval", "awaiting_authorization", "awaiting_input", "running"}
)
"""Timeline statuses of a call whose outcome is not known yet."""


def open_calls(timeline: list[ToolCallRecord], turn: int) -> set[str]:
    """The calls of `turn` whose outcome is not known yet: an AG-UI run that starts in
    the middle of that turn (a resume, a reconnect) shows their results."""
    return {r.call_id for r in timeline if r.turn == turn and r.status in _OPEN_STATUSES}


def run_error(message: str, code: str) -> RunErrorEvent:
    """The `RUN_ERROR` that ends an AG-UI run: `message` for a person, `code` for code."""
    return RunErrorEvent(message=message, code=code)


def decidable_by(approval: PendingApproval, user: User) -> bool:
    """Whether `user` may decide `approval` alone: the policy names them (or anyone), and
    theirs is the last approval its quorum needs. Otherwise it waits for others."""
    if decider_for(user, approval.deciders) is None:
        return False
    person = name_key(user.name)
    if any(person_of(name) == person for name in approval.approved_by):
        return False
    return approval.approvals_required - len(approval.approved_by) <= 1


def _waits(
    snapshot: RunSnapshot, user: User, nested: list[tuple[str, PendingApproval]]
) -> dict[str, Any]:
    """The state the front end shows: what the run waits for, and who may end each wait
    (`nested`: approvals its sub-agents wait for, as (sub-agent run, approval))."""
    waiting: list[dict[str, Any]] = []
    for approval in snapshot.pending_approvals:
        waiting.append(_approval_wait(approval, user))
    for child, approval in nested:
        # Never an interrupt: a resume decides the thread's own calls. The user (if a
        # decider) or others decide it in the inbox or with `durable-tools approve`.
        waiting.append({**_approval_wait(approval, user), "subAgentRun": child})
    for auth in snapshot.pending_authorizations:
        waiting.append(
            {
                "kind": "authorization",
                "callId": auth.call_id,
                "tool": auth.tool,
                "provider": auth.provider,
                "scopes": auth.scopes,
                "url": auth.authorization_url,
            }
        )
    for asked in snapshot.pending_inputs:
        waiting.append(
            {
                "kind": "question",
                "callId": asked.call_id,
                "tool": asked.tool,
                "questions": [q.message for q in asked.questions],
            }
        )
    for published in snapshot.pending_callbacks:
        waiting.append({"kind": "callback", "callId": published.call_id, "tool": published.tool})
    return {"status": snapshot.status.value, "turn": snapshot.turn, "waiting": waiting}


def _approval_wait(approval: PendingApproval, user: User) -> dict[str, Any]:
    """An approval as the state shows it."""
    return {
        "kind": "approval",
        "callId": approval.call_id,
        "tool": approval.tool,
        "summary": approval.summary,
        "arguments": approval.arguments,
        "argumentsHash": approval.arguments_hash,
        "deciders": approval.deciders,
        "approvalsRequired": approval.approvals_required,
        "approvedBy": approval.approved_by,
        "decidedBy": "you" if decidable_by(approval, user) else "others",
        "interruptId": interrupt_id(approval.call_id, approval.arguments_hash),
        "deadline": approval.deadline.isoformat() if approval.deadline else None,
    }


@dataclass
class TurnView:
    """What of the run this AG-UI run has shown so far, and what it turns into next.

    Args:
        base_turn: The run's model turn before this AG-UI run: later turns are its own.
        expected: Calls of earlier AG-UI runs whose outcome this one shows (an approved
            call's result after a resume).
        client_tools: The frontend tools' names: their calls are shown when published
            for the front end (with their arguments whole), and their results are the
            front end's own.
        answered: Frontend tool calls whose results this AG-UI run delivered.
    """

    base_turn: int
    expected: set[str] = field(default_factory=set)
    client_tools: frozenset[str] = frozenset()
    answered: set[str] = field(default_factory=set)
    started: set[str] = field(default_factory=set)
    resulted: set[str] = field(default_factory=set)
    step: int | None = None
    text_id: str | None = None
    text_turns: set[int] = field(default_factory=set)
    ended_turns: set[int] = field(default_factory=set)
    state: str | None = None
    shown: dict[str, int] = field(default_factory=dict)
    """Characters shown of each text message (the rejoin cursor carries them)."""
    skip: dict[str, int] = field(default_factory=dict)
    """Characters of each text message a rejoining client has already: not sent again."""

    def __post_init__(self) -> None:
        self.started |= self.expected | self.answered

    def cursor(self) -> str | None:
        """What this AG-UI run has shown, as the SSE event id a client sends back to
        rejoin (`rejoined`); None when it would be longer than `MAX_CURSOR_CHARS`."""
        data = {
            "b": self.base_turn,
            "s": self.step,
            "o": self.text_id,
            "t": self.shown,
            "e": sorted(self.ended_turns),
            "c": sorted(self.started),
            "r": sorted(self.resulted),
        }
        packed = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
        text = CURSOR_PREFIX + base64.urlsafe_b64encode(packed).decode().rstrip("=")
        return text if len(text) <= MAX_CURSOR_CHARS else None

    @classmethod
    def rejoined(cls, cursor: str, client_tools: frozenset[str]) -> TurnView:
        """The view of a client that saw the events up to `cursor` (an event id this
        endpoint gave): what it has is not sent again, what it misses is.

        Raises:
            ValueError: not a cursor this endpoint gives (its text says why).
        """
        if len(cursor) > MAX_CURSOR_CHARS or not cursor.startswith(CURSOR_PREFIX):
            raise ValueError("not an event id this endpoint gave")
        body = cursor[len(CURSOR_PREFIX) :]
        try:
            data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (ValueError, binascii.Error):
            raise ValueError("not an event id this endpoint gave") from None
        try:
            checked = _Cursor.model_validate(data)
        except ValidationError:
            raise ValueError("not an event id this endpoint gave") from None
        started, resulted = set(checked.c), set(checked.r)
        view = cls(
            checked.b,
            expected=started - resulted,
            client_tools=client_tools,
            started=started,
            resulted=resulted,
            step=checked.s,
            text_id=checked.o,
            ended_turns=set(checked.e),
            shown=dict(checked.t),
            skip=dict(checked.t),
        )
        # Turns whose text ended for the client need no whole answer; one cut short is
        # followed on in the token stream (or, gone from it, sent whole).
        view.text_turns = set(_turns_of(checked.t)) & view.ended_turns
        return view

    def _enter(self, turn: int) -> Iterator[BaseEvent]:
        """Open the step of `turn` (closing the one before) when it is a later one."""
        if turn <= self.base_turn or (self.step is not None and turn <= self.step):
            return
        yield from self.close_step()
        self.step = turn
        yield StepStartedEvent(step_name=f"turn {turn}")

    def close_step(self) -> Iterator[BaseEvent]:
        """Close the open text message and step."""
        yield from self._close_text()
        if self.step is not None:
            yield StepFinishedEvent(step_name=f"turn {self.step}")
            self.step = None

    def _close_text(self) -> Iterator[BaseEvent]:
        if self.text_id is not None:
            yield TextMessageEndEvent(message_id=self.text_id)
            self.text_id = None

    def on_stream(self, event: StreamEvent | None) -> Iterator[BaseEvent]:
        """The token stream's event as AG-UI events (text of this run's turns only; None
        is the wake-up the answer sends)."""
        if event is None or event.turn <= self.base_turn:
            return
        if event.kind in ("message_start", "text"):
            yield from self._enter(event.turn)
        if event.kind == "restarted":
            # A retried model call starts its message over: the text so far stands as
            # sent (AG-UI cannot take it back), the retry comes as a new message.
            yield from self._close_text()
        elif event.kind == "text" and event.text:
            ident = f"turn-{event.turn}-{event.attempt}"
            text = self._unseen(ident, event.text)
            self.text_turns.add(event.turn)
            if not text:
                return
            if self.text_id is None:
                self.text_id = ident
                yield TextMessageStartEvent(message_id=self.text_id, role="assistant")
            yield from self._content(self.text_id, text)
        elif event.kind in ("message_end", "elided"):
            yield from self._close_text()
            if event.kind == "message_end":
                self.ended_turns.add(event.turn)

    def _unseen(self, message_id: str, text: str) -> str:
        """`text` of `message_id` without what a rejoining client has of it already."""
        have = self.skip.get(message_id, 0)
        if not have:
            return text
        cut = min(have, len(text))
        self.skip[message_id] = have - cut
        return text[cut:]

    def _content(self, message_id: str, text: str) -> Iterator[BaseEvent]:
        self.shown[message_id] = self.shown.get(message_id, 0) + len(text)
        yield TextMessageContentEvent(message_id=message_id, delta=text)

    def whole_text(self, turn: int, text: str) -> Iterator[BaseEvent]:
        """The answer as one message, when the stream did not carry it."""
        if turn in self.text_turns or not text:
            return
        yield from self._enter(turn)
        message_id = f"turn-{turn}-answer"
        rest = self._unseen(message_id, text)
        if message_id not in self.shown:
            yield TextMessageStartEvent(message_id=message_id, role="assistant")
        if rest:
            yield from self._content(message_id, rest)
        yield TextMessageEndEvent(message_id=message_id)
        self.text_turns.add(turn)

    def on_timeline(self, timeline: list[ToolCallRecord]) -> Iterator[BaseEvent]:
        """Tool calls of this run's turns that started or ended since the last look."""
        for record in timeline:
            mine = record.turn > self.base_turn or record.call_id in self.expected
            if not mine or record.tool in self.client_tools:
                continue
            if record.call_id not in self.started:
                yield from self._enter(record.turn)
                yield from self._close_text()
                self.started.add(record.call_id)
                yield ToolCallStartEvent(
                    tool_call_id=record.call_id,
                    tool_call_name=record.tool,
                    parent_message_id=f"turn-{record.turn}",
                )
                yield ToolCallArgsEvent(tool_call_id=record.call_id, delta=record.arguments)
                yield ToolCallEndEvent(tool_call_id=record.call_id)
            if record.status not in _OPEN_STATUSES and record.call_id not in self.resulted:
                self.resulted.add(record.call_id)
                outcome = record.result or record.status
                if record.status != "completed":
                    outcome = f"{record.status}: {outcome}"
                yield ToolCallResultEvent(
                    message_id=f"result-{record.call_id}",
                    tool_call_id=record.call_id,
                    content=outcome,
                    role="tool",
                )

    def on_client_calls(self, published: list[PendingCallback]) -> Iterator[BaseEvent]:
        """The frontend tool calls published for the front end, with their arguments
        whole (the front end runs them with these), each once."""
        for pending in published:
            if pending.call_id in self.started:
                continue
            self.started.add(pending.call_id)
            yield from self._close_text()
            yield ToolCallStartEvent(tool_call_id=pending.call_id, tool_call_name=pending.tool)
            arguments = json.dumps(pending.arguments, ensure_ascii=False, separators=(",", ":"))
            yield ToolCallArgsEvent(tool_call_id=pending.call_id, delta=arguments)
            yield ToolCallEndEvent(tool_call_id=pending.call_id)

    def on_state(
        self,
        snapshot: RunSnapshot,
        user: User,
        nested: list[tuple[str, PendingApproval]] | None = None,
    ) -> Iterator[BaseEvent]:
        """A `STATE_SNAPSHOT` when what the run waits for changed (`nested`: approvals
        its sub-agents wait for)."""
        state = _waits(snapshot, user, nested or [])
        encoded = json.dumps(state, sort_keys=True, default=str)
        if encoded != self.state:
            self.state = encoded
            yield StateSnapshotEvent(snapshot=state)


def _interrupts(snapshot: RunSnapshot, user: User) -> list[Interrupt]:
    """The approvals the user may decide and the OAuth authorizations the run waits
    for, as AG-UI interrupts (what the inbox shows)."""
    found = []
    for auth in snapshot.pending_authorizations:
        found.append(
            Interrupt(
                id=authorization_interrupt_id(auth.call_id),
                reason="oauth_authorization",
                message=f"{auth.tool} needs your authorization at {auth.provider}",
                tool_call_id=auth.call_id,
                response_schema=_AUTHORIZATION_RESPONSE,
                expires_at=_expiry(auth.expires_at, auth.deadline),
                metadata={
                    "tool": auth.tool,
                    "provider": auth.provider,
                    "scopes": auth.scopes,
                    "url": auth.authorization_url,
                },
            )
        )
    for approval in snapshot.pending_approvals:
        if not decidable_by(approval, user):
            continue
        found.append(
            Interrupt(
                id=interrupt_id(approval.call_id, approval.arguments_hash),
                reason="tool_approval",
                message=approval.summary or f"{approval.tool} needs your approval",
                tool_call_id=approval.call_id,
                response_schema={
                    "type": "object",
                    "properties": {
                        "approved": {"type": "boolean"},
                        "reason": {"type": "string", "maxLength": 2000},
                    },
                    "required": ["approved"],
                },
                expires_at=approval.deadline.isoformat() if approval.deadline else None,
                metadata={
                    "tool": approval.tool,
                    "arguments": approval.arguments,
                    "argumentsHash": approval.arguments_hash,
                    "summary": approval.summary,
                },
            )
        )
    return found


_AUTHORIZATION_RESPONSE: dict[str, Any] = {
    "type": "object",
    "description": "resume with status 'resolved' once authorized at the link, "
    "'cancelled' to decline",
}


def _expiry(*times: datetime | None) -> str | None:
    """The earliest of `times` as ISO text (None when there is none)."""
    known = [t for t in times if t is not None]
    return min(known).isoformat() if known else None


async def _pump(
    stream: AsyncIterator[StreamEvent], queue: asyncio.Queue[StreamEvent | None]
) -> None:
    async for event in stream:
        await queue.put(event)


async def follow_turn(
    run: AgentRun,
    sent: SentMessage,
    view: TurnView,
    *,
    user: User,
    thread_id: str,
    run_id: str,
    cursor: int,
    streams: bool,
    poll_interval: float = 0.25,
    unsent: tuple[str, ...] = (),
) -> AsyncIterator[BaseEvent]:
    """The AG-UI events of one message's turns, until its answer or an interrupt.

    Args:
        run: The session.
        sent: The message being answered (its `result()` is the answer).
        view: What was shown already (the turn this AG-UI run starts after).
        user: Who is asking (decides which approvals are interrupts).
        thread_id: The AG-UI thread.
        run_id: The AG-UI run.
        cursor: The run's event index this AG-UI run starts at.
        streams: Whether the session streams its tokens (then the answer's text is
            awaited from the stream for a moment before it is sent whole).
        poll_interval: Seconds between looks at the run's events and status.
        unsent: Ids of the input's user messages this AG-UI run did not send (newer
            than the message a resume answers): its result names them.
    """
    tokens: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
    stream = run.stream()
    pump = asyncio.create_task(_pump(stream, tokens))
    reply_task: asyncio.Task[SessionReply] = asyncio.create_task(sent.result())
    reply_task.add_done_callback(lambda _: tokens.put_nowait(None))
    try:
        timeline_due = True
        subagents = False
        while not reply_task.done():
            while not tokens.empty():
                for event in view.on_stream(tokens.get_nowait()):
                    yield event
            page = await run.events_since(cursor)
            cursor = page.next
            snapshot = await run.status()
            pending = {a.call_id for a in snapshot.pending_approvals}
            if any(e.call_id for e in page.events) or not pending <= view.started:
                timeline_due = True
            if timeline_due:
                timeline_due = False
                timeline = await run.timeline()
                for event in view.on_timeline(timeline):
                    yield event
                subagents = any(r.child_run_id and r.status in _OPEN_STATUSES for r in timeline)
            # A sub-agent's approval is its run's, not the thread's: shown as waiting.
            nested = await run.subagent_approvals() if subagents else []
            for event in view.on_state(snapshot, user, nested):
                yield event
            interrupts = _interrupts(snapshot, user)
            published = [p for p in snapshot.pending_callbacks if p.client]
            for event in view.on_client_calls(published):
                yield event
            if interrupts or published:
                for event in view.close_step():
                    yield event
                if interrupts:
                    outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
                    yield RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)
                    return
                # The front end runs its tools now and sends their results back (the
                # next input's tool messages) to go on.
                waits: dict[str, Any] = {
                    "status": "awaiting_tools",
                    "toolCalls": [p.call_id for p in published],
                }
                if unsent:
                    waits["unsent"] = list(unsent)
                # The protocol's way to say which calls the application answers.
                pending_ids = [p.call_id for p in published]
                yield RunFinishedEvent(
                    thread_id=thread_id,
                    run_id=run_id,
                    outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=pending_ids),
                    result=waits,
                )
                return
            # Wake for the next token, the answer (its callback wakes the queue) or a look.
            got = False
            # `asyncio.timeout`, not `wait_for`: on Python 3.11 `wait_for` swallows a cancellation
            # that arrives with its result, and this loop would go on after its task was cancelled.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(poll_interval):
                    token = await tokens.get()
                    got = True
            if got:
                for event in view.on_stream(token):
                    yield event
        try:
            reply = reply_task.result()
        except Exception as error:  # the run refused or failed the message
            message = getattr(error, "message", None) or str(error) or type(error).__name__
            yield run_error(f"the session could not answer the message: {message}", "RUN_FAILED")
            return
        for event in view.on_timeline(await run.timeline()):
            yield event
        snapshot = await run.status()
        final_turn = snapshot.turn  # the session is idle again: its last turn answered
        if streams and final_turn > view.base_turn:  # else answered before this AG-UI run
            # Per wait, not a timeout block: the generator yields between waits, and each
            # step of it may run in another task (the response's keep-alive does that).
            deadline = asyncio.get_running_loop().time() + FINAL_TEXT_GRACE
            while final_turn not in view.ended_turns:
                left = deadline - asyncio.get_running_loop().time()
                try:
                    async with asyncio.timeout(max(left, 0.0)):  # see the loop above
                        token = await tokens.get()
                except TimeoutError:
                    break
                for event in view.on_stream(token):
                    yield event
        while not tokens.empty():
            for event in view.on_stream(tokens.get_nowait()):
                yield event
        for event in view.whole_text(final_turn, reply.answer or ""):
            yield event
        for event in view.on_state(snapshot, user):
            yield event
        for event in view.close_step():
            yield event
        result: dict[str, Any] = {
            "answer": reply.answer,
            "status": reply.status,
            "message": reply.message,
        }
        if unsent:
            result["unsent"] = list(unsent)
        yield RunFinishedEvent(thread_id=thread_id, run_id=run_id, result=result)
    finally:
        for task in (pump, reply_task):
            task.cancel()
        # Bounded: a watcher slow to stop must not hold the response open.
        await asyncio.wait({pump, reply_task}, timeout=CLEANUP_SECONDS)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(stream.aclose(), CLEANUP_SECONDS)  # type: ignore[attr-defined]
