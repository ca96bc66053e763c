"""`AgentRun`: a handle on one agent run (read it, decide its approvals, steer, cancel)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

from pydantic import TypeAdapter
from temporalio.client import (
    WorkflowExecutionDescription,
    WorkflowFailureError,
    WorkflowQueryFailedError,
)
from temporalio.exceptions import CancelledError

from durable_tools._activities._conversation import whole_conversation
from durable_tools._callbacks_client import serve_callbacks
from durable_tools._run_cancelled import cancelled_result
from durable_tools._run_decisions import RunDecisions
from durable_tools._run_progress import ToolProgress, progress_in
from durable_tools._session_client import RunSessions
from durable_tools.events import EventSink, FollowResult, follow_events
from durable_tools.messages import Message
from durable_tools.protocol._run_io import ConversationView
from durable_tools.streaming import StreamEvent
from durable_tools.streaming._watch import follow_stream
from durable_tools.tools._artifacts import ArtifactStore, fetch_artifact, ref_from_uri
from durable_tools.tools._results import ArtifactRef
from durable_tools.workflows import (
    AgentResult,
    EventsPage,
    RunEvent,
    Steer,
    ToolCallRecord,
)

__all__ = ["AgentRun"]

_T = TypeVar("_T")


class AgentRun(RunDecisions, RunSessions):
    """A handle on one agent run (a workflow id).

    An agent loop embedded in a workflow of your own (`AgentLoop.register_handlers`) is
    reached the same way: `run_id` is the host workflow's id and `prefix` the loop's
    handler prefix. Everything but `result()` works on it (the host's result is the
    host's own).

    Args:
        client: The client the run is reached through.
        run_id: The run's workflow id.
        output_type: The Python type of the run's structured final answer, for
            `result()` to turn `AgentResult.output` into.
        prefix: The handler prefix of an embedded loop; "" for an agent workflow.

    Raises:
        ValueError: `prefix` is not a handler prefix a loop can have.
    """

    async def result(self, output_type: Any = None) -> AgentResult:
        """Wait for the run to end and return how it ended (follows continue-as-new).

        Args:
            output_type: The type to validate `AgentResult.output` into; default the
                handle's (the `output_type` the run was started with from this process).
                Without one, `output` stays the JSON object the workflow validated.

        Raises:
            pydantic.ValidationError: The answer matched the run's JSON schema but not
                the type (a validator of the type that the schema cannot express).
        """
        if self.prefix:
            raise TypeError(
                f"run {self.run_id!r} is an agent loop embedded under the prefix "
                f"{self.prefix!r}: its host workflow's result is the host's own; ask "
                "client.get_workflow_handle(run_id).result(), or status() for the loop"
            )
        try:
            result = await self.handle.result()
        except WorkflowFailureError as error:
            if not isinstance(error.cause, CancelledError):
                raise
            result = await cancelled_result(self.handle, error.cause)
        wanted = output_type if output_type is not None else self.output_type
        if wanted is not None and result.output is not None:
            result.output = TypeAdapter(wanted).validate_python(result.output)
        return result

    async def serve_callbacks(
        self, handlers: Mapping[str, Callable[..., Any]], *, poll_interval: float = 0.5
    ) -> int:
        """Run this run's callback tools here until it ends (see `_callbacks_client`):
        `handlers` maps tool names to callables taking the arguments as keywords."""
        return await serve_callbacks(
            self.handle, handlers, poll_interval=poll_interval, prefix=self.prefix
        )

    async def decided_timeline(
        self, timeline: list[ToolCallRecord] | None = None
    ) -> list[ToolCallRecord]:
        """The timeline with who decided each approval, when and why.

        Every record carries its decision (`decided_by`, `decided_at`, `decision_reason`,
        set by the run when it records the decision), so this is the timeline itself.

        Args:
            timeline: The run's timeline when the caller already has it (saves a query).
        """
        return timeline if timeline is not None else await self.timeline()

    async def conversation(self, store: ArtifactStore | None = None) -> list[Message]:
        """The whole conversation so far.

        A continued run holds only the messages after its conversation snapshot: the
        earlier ones are read from the artifact store (`store`, default the one the
        snapshot points into), which this process must reach.

        Raises:
            SnapshotMissing: the store does not hold the snapshot.
        """
        try:
            view = await self._query("conversation_view", ConversationView)
        except WorkflowQueryFailedError:
            # A worker from before the query: it answers what its run holds.
            return await self._query("conversation", list[Message])
        return await whole_conversation(
            view.snapshot, view.snapshot_length, view.offset, view.messages, store
        )

    async def artifact(self, ref: ArtifactRef | str, store: ArtifactStore | None = None) -> bytes:
        """The full bytes of an artifact (a large tool output kept out of the history).

        Args:
            ref: A reference from the run's timeline (`ToolCallRecord.outcome.artifacts`)
                or the URI a truncated output names.
            store: Where to read; default the store the reference points into
                (`s3://` with `DURABLE_TOOLS_S3_ENDPOINT` and the AWS credentials of this
                process, or the `file://` directory).

        Raises:
            KeyError: the store does not hold it, or it does not match its sha256.
            ValueError: `ref` is a string that names no artifact.
        """
        if isinstance(ref, str):
            ref = ref_from_uri(ref)
        return await fetch_artifact(ref, store)

    async def events(self) -> list[RunEvent]:
        """The run's kept events (the last `AgentConfig.events_kept`)."""
        return await self._query("events", list[RunEvent])

    async def events_since(self, cursor: int) -> EventsPage:
        """The kept events from event index `cursor` on, and the cursor to ask from next."""
        return await self._query("events_since", EventsPage, cursor)

    async def follow_events(
        self, sink: EventSink, *, cursor: int = 0, interval: float = 0.5
    ) -> FollowResult:
        """Deliver every event of the run to `sink`, in order, until the run ends.

        See `durable_tools.events.follow_events`.
        """
        return await follow_events(self, sink, cursor=cursor, interval=interval)

    async def progress(
        self, description: WorkflowExecutionDescription | None = None
    ) -> list[ToolProgress]:
        """The latest typed progress of each running tool call that reports some.

        Read from the run's pending activities (`describe()`): heartbeats are not history
        events, so progress costs the history nothing, and it is never in the conversation.

        Args:
            description: The run's `describe()` answer when the caller already has it.
        """
        described = description if description is not None else await self.handle.describe()
        return await progress_in(self.client, described)

    def stream(self) -> AsyncIterator[StreamEvent]:
        """The run live: the model's text as it is generated, tool progress, its end.

        Needs `AgentConfig(stream_tokens=True)` for the text; tool progress comes either
        way. The iterator ends after a `run_ended` event. See docs/streaming.md.
        """
        return follow_stream(self.client, self.run_id, progress=self.progress)

    async def child_runs(self) -> list[AgentRun]:
        """Sub-agent runs this run started, in the order it started them."""
        return [
            AgentRun(self.client, record.child_run_id)
            for record in await self.timeline()
            if record.child_run_id
        ]

    async def steer(self, instruction: str, *, skip_remaining: bool = False) -> None:
        """Give the model a new instruction before its next turn.

        Args:
            instruction: What the model should do now; it reads it as a user message.
            skip_remaining: Also skip the current turn's calls that have not started:
                each gets the result `skipped: the user steered: <instruction>`, and calls
                waiting for approval stop waiting (a later decision is rejected). Calls
                already running finish.

        Raises:
            pydantic.ValidationError: The instruction is empty or too long (checked here,
                before anything is sent).
        """
        steer = Steer(instruction=instruction, skip_remaining=skip_remaining)
        if skip_remaining:
            await self._signal("steer_turn", steer)
        else:
            # The plain signal: workers deployed before `steer_turn` existed understand it.
            await self._signal("steer", steer.instruction)

    async def cancel(self, reason: str | None = None) -> None:
        """End the run cleanly, cancelling running tools; it closes CANCELED in Temporal.

        Temporal's cancellation request, with `reason`: the run stops the clean way (calls
        not started never start, waits stop, running tools get their grace period), and
        the execution then closes as cancelled, so the UI's status filter and `runs
        --status` find it; `result()` still reads how it ended. An embedded loop gets the
        `cancel` signal instead: its host workflow decides how the host ends.
        """
        if self.prefix:
            await self._signal("cancel", reason)
        else:
            await self.handle.cancel(reason=reason or "")
