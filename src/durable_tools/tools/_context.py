"""What a running tool can see: `ToolContext`, and `Injected` for worker-side values.

Both are hidden from the model: a parameter typed `ToolContext` or annotated
`Annotated[T, Injected("name")]` never appears in the tool's schema, and a model
that supplies one anyway is rejected, never obeyed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from ._artifacts import ArtifactStore
from ._errors import Cancelled, ToolError
from ._progress import (
    RECENT_PROGRESS,
    Progress,
    ProgressBeat,
    bounded_partial,
    clean_fraction,
    clean_message,
    parse_beat,
)
from ._results import ToolNote

__all__ = [
    "MAX_TOOL_EVENTS",
    "MAX_TOOL_EVENT_DATA_BYTES",
    "Identity",
    "Injected",
    "MissingResource",
    "ToolContext",
    "current_trace_id",
]

MAX_TOOL_EVENTS = 10
"""Entries one attempt of a tool may write to the run's audit stream (`ToolContext.emit`)."""

MAX_TOOL_EVENT_DATA_BYTES = 1_000
"""Largest `data` (as JSON) of one entry: the entries travel in the activity's result,
which is recorded in history with every call."""


class Identity(BaseModel):
    """Who a run acts for. Recorded in history: identifiers only, never credentials."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str | None = None
    user: str | None = None
    session: str | None = None


class MissingResource(LookupError):
    """A tool asked for a worker-side resource or secret that the worker does not have."""


@dataclass(frozen=True)
class Injected:
    """Marks a parameter whose value comes from the worker, never from the model.

    Use as `Annotated[httpx.AsyncClient, Injected("http")]`. Without a name, the
    parameter's own name is looked up in the worker's resources.

    Args:
        name: The resource (or secret, with `secret=True`) to look up on the worker.
        secret: Look the name up among the worker's secrets instead of its resources.
    """

    name: str | None = None
    secret: bool = False


def current_trace_id() -> str | None:
    """The current OpenTelemetry span's trace id as W3C `traceparent` writes it (32
    lowercase hex digits), or None without OpenTelemetry (the `otel` extra) or a valid span."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    context = trace.get_current_span().get_span_context()
    return trace.format_trace_id(context.trace_id) if context.is_valid else None


def _no_progress(_: Any) -> None:
    return None


_UNSET: Any = object()


@dataclass
class ToolContext:
    """Everything a tool call knows about itself, built on the worker for each attempt.

    Tools receive it by declaring a parameter of this type (any name).
    """

    tool_call_id: str
    """The model's id for this call; stable for the life of the call."""
    tool_name: str
    """The tool being called."""
    run_id: str = ""
    """The agent run (Temporal workflow id) this call belongs to."""
    idempotency_key: str = ""
    """`<workflow id>/<tool call id>`: the same on every attempt, after a crash or a restart."""
    attempt: int = 1
    """1 for the first attempt, then 2, 3, ..."""
    identity: Identity = field(default_factory=Identity)
    """Tenant, user and session the run acts for."""
    heartbeat_details: Any = None
    """What the previous attempt last reported through `progress` (its `details`, else its
    first argument), so a long tool can resume."""
    resources: Mapping[str, Any] = field(default_factory=dict)
    """Worker-side objects (clients, stores) by name."""
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Worker-side secrets by name. Never logged, never in history."""
    access_token: str | None = field(default=None, repr=False)
    """The OAuth access token for the tool's provider, when the tool declares one."""
    artifact_store: ArtifactStore | None = field(default=None, repr=False)
    """The worker's artifact store, for outputs (images, binary bodies) kept out of band."""
    previous_progress: Progress | None = None
    """The last progress the previous attempt reported, when it reported any."""
    input_responses: Mapping[str, Any] | None = field(default=None, repr=False)
    """The user's answers to the questions the tool's MCP server asked in the call's
    previous round (elicitation), by question key; None on a first round."""
    request_state: str | None = field(default=None, repr=False)
    """The MCP server's opaque state from the call's previous round, to echo back."""
    trace_id: str | None = field(default_factory=lambda: current_trace_id())
    """The run's trace id as W3C `traceparent` writes it (32 lowercase hex digits), from
    the OpenTelemetry span current where the context is built (the tool activity builds it
    inside its span, in the run's trace, continued from its caller's); None when the
    worker does not trace. For a tool's own logs and the spans it opens elsewhere."""
    _progress: Callable[[Any], None] = field(default=_no_progress, repr=False)
    _recent: list[Progress] = field(default_factory=list, repr=False)
    _progress_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)
    _interruption: ToolError | None = field(default=None, repr=False)
    """Why the attempt was stopped (`_cancel`): what its hooks and listeners are told."""
    _groups: list[int] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _notes: list[ToolNote] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # An attempt after one that reported typed progress: give the tool back what it
        # asked to resume from, and keep the report (and its numbering) for display.
        beat = parse_beat(self.heartbeat_details)
        if beat is not None:
            self.heartbeat_details = beat.details
            self.previous_progress = beat.progress
            self._recent = [*beat.recent, beat.progress.model_copy(update={"partial": None})]

    def progress(
        self,
        message: Any = None,
        *,
        fraction: float | None = None,
        partial: Any = None,
        details: Any = _UNSET,
    ) -> None:
        """Report progress (and heartbeat): shown to people, never to the model.

        The report becomes the call's heartbeat details, which clients read through
        `AgentRun.progress()`, `durable-tools show` and `watch`; no history event is
        written per report. Safe to call from a sync tool (which runs in a thread) as well
        as from an async one.

        Args:
            message: What the tool is doing. Older code passes any value here to resume
                from; a non-text value is then shown abridged.
            fraction: How far along, from 0 to 1 (clamped).
            partial: A partial result (JSON, at most `MAX_PARTIAL_BYTES`; a larger one is
                described instead).
            details: What a retried attempt gets back as `heartbeat_details`; by default
                `message`, as before typed progress existed.
        """
        resume = message if details is _UNSET else details
        with self._progress_lock:
            previous = self._recent[-1].seq if self._recent else 0
            report = Progress(
                message=clean_message(message),
                fraction=clean_fraction(fraction),
                partial=bounded_partial(partial),
                seq=previous + 1,
            )
            recent = self._recent[-RECENT_PROGRESS:]
            self._recent = [*recent, report.model_copy(update={"partial": None})]
        beat = ProgressBeat(
            call_id=self.tool_call_id, tool=self.tool_name, progress=report, recent=recent
        )
        # The resume value goes as given (not through pydantic's JSON mode): it reaches
        # the data converter exactly as it did before typed progress existed.
        self._progress({**beat.model_dump(mode="json", exclude={"details"}), "details": resume})

    heartbeat = progress

    def emit(self, detail: str, data: Any = None) -> bool:
        """Write an entry to the run's audit stream, as a `tool.event` of this call.

        The entry reaches the run with the attempt's result, so it is recorded once, in
        order, before the call's `tool.completed` (or `tool.failed` when the tool returns
        an error result); an attempt that raises takes its entries with it. Secrets of the
        call are scrubbed from both fields. Safe from sync tools (threads) and async ones.

        Args:
            detail: One line for people (white space folded, cut at 500 characters).
            data: JSON data for machines, at most `MAX_TOOL_EVENT_DATA_BYTES` as JSON.

        Returns:
            Whether the entry was kept: the first `MAX_TOOL_EVENTS` of an attempt are.

        Raises:
            ValueError: `data` is not JSON or is larger than the bound (a bug in the tool,
                told at once rather than at the end of the call).
        """
        if data is not None:
            try:
                encoded = json.dumps(data, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise ValueError(f"emit: data must be plain JSON ({error})") from None
            if len(encoded.encode()) > MAX_TOOL_EVENT_DATA_BYTES:
                raise ValueError(
                    f"emit: data is over {MAX_TOOL_EVENT_DATA_BYTES} bytes as JSON; "
                    "keep large values in an artifact"
                )
            data = json.loads(encoded)  # a copy: later changes by the tool do not reach it
        line = clean_message(" ".join(str(detail).split())) or ""
        with self._progress_lock:
            if len(self._notes) >= MAX_TOOL_EVENTS:
                return False
            self._notes.append(ToolNote(detail=line, data=data))
        return True

    @property
    def emitted(self) -> list[ToolNote]:
        """The entries this attempt wrote (`emit`), in order."""
        with self._progress_lock:
            return list(self._notes)

    @property
    def cancelled(self) -> bool:
        """Whether the run asked this call to stop. Long tools should check it between steps.

        A plain thread-safe flag: sync tools, which Python cannot interrupt, poll it.
        """
        return self._cancel_event.is_set()

    def raise_if_cancelled(self) -> None:
        """Stop here if the call was cancelled: the call is then recorded as cancelled.

        Raises:
            Cancelled: the run asked this call to stop.
        """
        if self.cancelled:
            raise Cancelled(f"tool call {self.tool_call_id} ({self.tool_name}) was cancelled")

    async def wait_cancelled(self) -> None:
        """Wait until the call is cancelled (for tools that race work against cancellation)."""
        while not self.cancelled:
            await asyncio.sleep(0.1)

    def popen(self, args: str | Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start a subprocess that lives no longer than this call (for sync tools).

        Takes the arguments of `subprocess.Popen`. The process starts in its own process
        group (session), and the whole group is killed (SIGKILL) when the call is cancelled
        or ends, so neither it nor its children outlive a cancelled or finished call.

        Raises:
            Cancelled: the call was already cancelled; nothing was started.
        """
        self.raise_if_cancelled()
        process = subprocess.Popen(args, start_new_session=True, **kwargs)
        self._adopt(process.pid)
        return process

    async def create_subprocess_exec(
        self, program: str, *args: str, **kwargs: Any
    ) -> asyncio.subprocess.Process:
        """`asyncio.create_subprocess_exec` for async tools, with the guarantees of `popen`.

        Raises:
            Cancelled: the call was already cancelled; nothing was started.
        """
        self.raise_if_cancelled()
        start = asyncio.ensure_future(
            asyncio.create_subprocess_exec(program, *args, start_new_session=True, **kwargs)
        )
        # Adopt the process even if the tool is cancelled while it starts.
        start.add_done_callback(
            lambda done: (
                None if done.cancelled() or done.exception() else self._adopt(done.result().pid)
            )
        )
        return await asyncio.shield(start)

    def _adopt(self, group: int) -> None:
        # Registering and checking under the lock that `_cancel` holds: a process started
        # while the call is being cancelled is killed by one side or the other.
        with self._lock:
            self._groups.append(group)
            if self._cancel_event.is_set():
                _kill_group(group)

    def _cancel(self, why: ToolError | None = None) -> None:
        """Mark the call cancelled and kill its subprocesses (called by the activity).

        Args:
            why: How the attempt was stopped (`Cancelled`, or `ToolTimeout` when it timed
                out), for its hooks and listeners; a plain `Cancelled` when not given.
        """
        if self._interruption is None:
            self._interruption = why
        self._cancel_event.set()
        self._kill_subprocesses()

    def _kill_subprocesses(self) -> None:
        """Kill every process group this call started that is still running."""
        with self._lock:
            for group in self._groups:
                _kill_group(group)
            self._groups.clear()

    def resource(self, name: str) -> Any:
        """A worker-side resource by name.

        Raises:
            MissingResource: the worker has no resource of that name.
        """
        try:
            return self.resources[name]
        except KeyError:
            raise MissingResource(f"worker has no resource named {name!r}") from None

    def secret(self, name: str) -> str:
        """A worker-side secret by name.

        Raises:
            MissingResource: the worker has no secret of that name.
        """
        try:
            return self.secrets[name]
        except KeyError:
            raise MissingResource(f"worker has no secret named {name!r}") from None


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
