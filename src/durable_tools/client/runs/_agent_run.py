"""`AgentRun`: the handle on one agent run, in one class that reads top to bottom.

Reach the run (its workflow handle and its handlers by name), read it, find and decide its
approvals (`decide_request`, the one decide path of every surface), change its policy and
grants, send a session its messages, steer it, cancel it, serve its callback tools.

What it calls that is a concept of its own lives next to it: the decide operation's typed
errors and checks (`_decide`), whether a worker polls (`_workers`), tool progress
(`_progress`), how a cancelled run ended (`_cancelled`); a session's messages
(`client/sessions`), callback tools (`client/callbacks`).

An agent run's handlers have their plain names; an agent loop embedded in a workflow of
the user's has them under its prefix (`AgentLoop.register_handlers`): `_query`,
`_update` and `_signal` put the prefix before every name, so the rest of the handle is
the same for both.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError, RPCStatusCode

from durable_tools._activities._conversation import whole_conversation
from durable_tools.client.callbacks._serve import serve_callbacks
from durable_tools.client.runs._cancelled import cancelled_result
from durable_tools.client.runs._decide import (
    DECIDE_TIMEOUT,
    LOOKUP_TIMEOUT,
    AlreadyDecided,
    AmbiguousRequest,
    DecisionError,
    DecisionRecorded,
    DecisionTimedOut,
    MalformedDecision,
    NotADecider,
    NothingPending,
    RejectedByRun,
    WorkerUnavailable,
    arguments_hash_given,
    asking,
    open_run,
    stale_request,
    unreachable,
)
from durable_tools.client.runs._progress import (
    MAX_SUBAGENT_DEPTH,
    MAX_SUBAGENTS_READ,
    ToolProgress,
    progress_in,
)
from durable_tools.client.runs._workers import has_workers
from durable_tools.client.sessions._messages import (
    SentMessage,
    close_session,
    message_handle,
    start_message,
)
from durable_tools.events import EventSink, FollowResult, follow_events
from durable_tools.events._follow import marked
from durable_tools.messages import Message
from durable_tools.protocol._deciders import decider_name
from durable_tools.protocol._limits import (
    MAX_CALL_ID_CHARS,
    MAX_REASON_CHARS,
    check_handler_prefix,
)
from durable_tools.protocol._policy_types import BatchDecision, BatchItem, GrantRevocation
from durable_tools.protocol._records import EventsPage
from durable_tools.protocol._run_io import ConversationView
from durable_tools.protocol._session_types import SessionReply
from durable_tools.protocol._types import PolicyChange, Steer
from durable_tools.server import ui_url
from durable_tools.streaming import StreamEvent
from durable_tools.streaming._watch import follow_stream
from durable_tools.tools._artifacts import ArtifactStore, fetch_artifact, ref_from_uri
from durable_tools.tools._results import ArtifactRef
from durable_tools.workflows import (
    AgentResult,
    AgentWorkflow,
    ApprovalDecision,
    ApprovalPolicy,
    GrantRequest,
    PendingApproval,
    RunEvent,
    RunSnapshot,
    StandingGrant,
    ToolCallRecord,
)

__all__ = ["AgentRun", "PendingRequest"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class PendingRequest:
    """A request waiting for a person, with the run that waits for it."""

    run: AgentRun
    """The run that waits: the one asked, or one of its sub-agents."""
    approval: PendingApproval
    """The request as a person should see it (tool, arguments, hash, deciders)."""


class AgentRun:
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

    def __init__(
        self, client: Client, run_id: str, output_type: Any = None, *, prefix: str = ""
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.output_type = output_type
        self.prefix = check_handler_prefix(prefix)
        self.handle: WorkflowHandle[AgentWorkflow, AgentResult] = client.get_workflow_handle_for(
            AgentWorkflow.run, run_id
        )

    @property
    def ui_url(self) -> str:
        """The run's page in the Temporal UI (`TEMPORAL_UI_URL`, else the UI the embedded
        server on the run's address recorded, else the default next to it)."""
        address = self.client.service_client.config.target_host
        return ui_url(self.client.namespace, self.run_id, address=address)

    # ------------------------------------ its handlers by name (under the loop's prefix)

    async def _query(self, name: str, result_type: type[_T], *args: Any) -> _T:
        """Ask the run's query `name` (under the loop's prefix)."""
        answer: _T = await self.handle.query(self.prefix + name, args=args, result_type=result_type)
        return answer

    async def _update(self, name: str, argument: Any, result_type: type[_T]) -> _T:
        """Send the run's update `name` (under the loop's prefix); its verdict."""
        verdict: _T = await self.handle.execute_update(
            self.prefix + name, argument, result_type=result_type
        )
        return verdict

    async def _signal(self, name: str, argument: Any) -> None:
        """Send the run's signal `name` (under the loop's prefix)."""
        await self.handle.signal(self.prefix + name, argument)

    # --------------------------------------------------------------- reading the run

    async def status(self) -> RunSnapshot:
        """What the run is doing now (a query; needs a worker, also for ended runs)."""
        return await self._query("status", RunSnapshot)

    async def timeline(self) -> list[ToolCallRecord]:
        """Every tool call of the run so far."""
        return await self._query("timeline", list[ToolCallRecord])

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

    async def events(self, *, subagents: bool = True) -> list[RunEvent]:
        """The run's kept events (the last `AgentConfig.events_kept`), in time order.

        With `subagents`, the kept events of the sub-agents its kept events say it started
        (and theirs, `MAX_SUBAGENT_DEPTH` levels, `MAX_SUBAGENTS_READ` each) are merged
        in, each marked with the sub-agent's run id (`RunEvent.subagent_run`); a
        sub-agent that does not answer within `LOOKUP_TIMEOUT` is left out.
        """
        return await self._events_with_subagents(MAX_SUBAGENT_DEPTH if subagents else 0)

    async def _events_with_subagents(self, depth: int) -> list[RunEvent]:
        own = await self._query("events", list[RunEvent])
        children = list(dict.fromkeys(c for e in own if (c := e.started_subagent)))
        if depth <= 0 or not children:
            return own

        async def of(child_id: str) -> list[RunEvent]:
            child = self._other(child_id)
            try:
                theirs = await asyncio.wait_for(
                    child._events_with_subagents(depth - 1), LOOKUP_TIMEOUT
                )
            except (RPCError, WorkflowQueryFailedError, TimeoutError):
                return []
            return [marked(event, child_id) for event in theirs]

        answers = await asyncio.gather(*(of(c) for c in children[:MAX_SUBAGENTS_READ]))
        merged = own + [event for answer in answers for event in answer]
        merged.sort(key=lambda event: event.at)  # stable: a run's own order stays
        return merged

    async def events_since(self, cursor: int) -> EventsPage:
        """The kept events from event index `cursor` on, and the cursor to ask from next."""
        return await self._query("events_since", EventsPage, cursor)

    async def follow_events(
        self, sink: EventSink, *, cursor: int = 0, interval: float = 0.5
    ) -> FollowResult:
        """Deliver every event of the run to `sink`, in order, until the run ends.

        See `durable_tools.events.follow_events`.
        """
        return await follow_events(
            self, sink, cursor=cursor, interval=interval, subagent=self._other
        )

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

    # ------------------------------- approvals pending in the run and its sub-agents

    async def pending_approvals(self) -> list[tuple[str, PendingApproval]]:
        """Approvals this run and its running sub-agents wait for, as (run id, approval)."""
        snapshot = await self.status()
        mine = [(self.run_id, approval) for approval in snapshot.pending_approvals]
        return mine + await self.subagent_approvals()

    async def subagent_approvals(
        self, timeline: list[ToolCallRecord] | None = None
    ) -> list[tuple[str, PendingApproval]]:
        """Approvals that this run's running sub-agents (and theirs) wait for.

        Args:
            timeline: The run's timeline when the caller already has it (saves a query).
        """
        found: list[tuple[str, PendingApproval]] = []
        for child in await self._answering_subagents(timeline):
            try:
                found += await child.pending_approvals()
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                # Being started (or gone): it waits for nothing yet.
        return found

    async def _answering_subagents(
        self, timeline: list[ToolCallRecord] | None = None
    ) -> list[AgentRun]:
        """This run's running sub-agents that can answer a query: those a worker serves.

        A sub-agent may run on a task queue of its own; while no worker polls it, a query
        to it waits until the RPC times out, and asking it would stop everyone deciding
        this run's own calls. It is left out: nothing of it can be decided before its
        worker comes anyway.
        """
        children = []
        for record in timeline if timeline is not None else await self.timeline():
            if not (record.child_run_id and record.status == "running"):
                continue
            child = self._other(record.child_run_id)
            try:
                task_queue = (await child.handle.describe()).task_queue
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                continue  # being started (or gone): it waits for nothing yet
            if await has_workers(self.client, task_queue):
                children.append(child)
        return children

    async def find_approval(self, call_id: str) -> tuple[AgentRun, PendingApproval] | None:
        """The approval pending for `call_id` in this run or one of its running sub-agents,
        with the run that waits for it; None when no such approval is pending."""
        for approval in (await self.status()).pending_approvals:
            if approval.call_id == call_id:
                return self, approval
        for run_id, approval in await self.subagent_approvals():
            if approval.call_id == call_id:
                return self._other(run_id), approval
        return None

    def _other(self, run_id: str) -> AgentRun:
        """The handle on another run (a sub-agent's), reached the same way."""
        return type(self)(self.client, run_id)

    # ----------------------------------------------------------- the one decide path

    async def find_request(
        self, call_id: str, *, arguments_hash: str | None = None
    ) -> PendingRequest:
        """The one request pending for `call_id` in this run or its running sub-agents
        that a decision names (by `arguments_hash` when given), with the run that waits.

        What a surface shows a person before they decide; `decide_request` looks it up
        again when the decision is sent, so a request replaced meanwhile is never decided.

        Raises:
            MalformedDecision: a call id or hash that cannot name a request.
            RunNotFound, RunEnded: no such run, or it has ended.
            WorkerUnavailable: no worker polls the run's task queue, or none answered.
            RunUnreadable: the run's payloads are encrypted and this client has no keys.
            AlreadyDecided: nothing pending under `call_id`; the run records who decided it.
            NothingPending: nothing pending under `call_id`, and no decision of it either.
            StaleRequest: `arguments_hash` names none of what is pending under `call_id`.
            AmbiguousRequest: several requests match (in the run and its sub-agents).
        """
        if not isinstance(call_id, str) or not 0 < len(call_id) <= MAX_CALL_ID_CHARS:
            raise MalformedDecision(
                f"a call id is 1 to {MAX_CALL_ID_CHARS} characters",
                run_id=self.run_id,
                call_id=str(call_id)[:MAX_CALL_ID_CHARS],
            )
        digest = None
        if arguments_hash is not None:
            digest = arguments_hash_given(arguments_hash, run_id=self.run_id, call_id=call_id)
        task_queue = (await open_run(self.handle, call_id)).task_queue
        if not await has_workers(self.client, task_queue):
            raise WorkerUnavailable(
                f"no worker polls task queue {task_queue} of run {self.run_id}: nothing was "
                "decided; start one (`durable-tools worker --tools MODULE --task-queue ...`)",
                run_id=self.run_id,
                call_id=call_id,
                task_queue=task_queue,
            )
        async with asking(self.handle, call_id, task_queue):
            everything = await asyncio.wait_for(self.pending_approvals(), LOOKUP_TIMEOUT)
        waiting = [(run_id, a) for run_id, a in everything if a.call_id == call_id]
        if not waiting:
            async with asking(self.handle, call_id, task_queue):
                decided = await asyncio.wait_for(self._decided(call_id), LOOKUP_TIMEOUT)
            if decided is not None:
                raise AlreadyDecided(decided, run_id=self.run_id)
            pending = sorted({a.call_id for _, a in everything})
            raise NothingPending(
                f"no approval is pending for call {call_id} in run {self.run_id} (pending: "
                f"{', '.join(pending) or 'none'}; see `durable-tools pending`)",
                run_id=self.run_id,
                call_id=call_id,
                pending=pending,
            )
        if digest is not None:
            waiting = [(run_id, a) for run_id, a in waiting if a.arguments_hash == digest]
            if not waiting:
                raise stale_request(self.run_id, call_id)
        if len(waiting) > 1:
            runs = [run_id for run_id, _ in waiting]
            raise AmbiguousRequest(
                f"several requests are pending for call {call_id} (in runs {', '.join(runs)}): "
                "decide it in the run that waits for it, with its arguments hash",
                run_id=self.run_id,
                call_id=call_id,
                run_ids=runs,
            )
        run_id, approval = waiting[0]
        return PendingRequest(self if run_id == self.run_id else self._other(run_id), approval)

    async def decide_request(
        self,
        call_id: str,
        approve: bool,
        *,
        arguments_hash: str | None,
        decider: str,
        groups: Iterable[str] = (),
        reason: str | None = None,
        grant: GrantRequest | None = None,
        timeout: float = DECIDE_TIMEOUT,
    ) -> DecisionRecorded:
        """Decide the request a person was shown: the one operation every surface uses.

        Finds the request pending for `call_id` in this run or a running sub-agent
        (`find_request`), checks that `decider` may decide it, and sends the decision to
        the run that waits for it, bound to the request's arguments hash: the run refuses
        it if the call pending under that id changed before it lands.

        Args:
            call_id: The call, as the request showed it.
            approve: Approve (True) or deny (False).
            arguments_hash: The hash of the request shown (required to approve). A denial
                may leave it out: it then denies whatever single request is pending under
                `call_id` now (denying is the safe direction; an unknown or decided call is
                still refused).
            decider: The person deciding (as authenticated, or as asserted by an operator
                with rights on the namespace). Names compare as the policy compares them.
            groups: The person's groups, as checked by whoever authenticated them (the
                inbox's tokens file): a policy naming `group:ops` lets its members decide,
                recorded as `alice via group:ops`.
            reason: Why (kept in the run's history).
            grant: With an approval: also stop asking (a standing grant).
            timeout: Seconds the run's worker has to take the decision.

        Returns:
            What the run recorded.

        Raises:
            DecisionError: nothing was recorded; the subclass says why (see
                `find_request`, and `NotADecider`, `RejectedByRun`, `DecisionTimedOut`).
        """
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
            raise MalformedDecision(
                f"a reason is a text of at most {MAX_REASON_CHARS} characters",
                run_id=self.run_id,
                call_id=str(call_id)[:MAX_CALL_ID_CHARS],
            )
        if approve and arguments_hash is None:
            raise MalformedDecision(
                "an approval names the request it approves: pass the arguments hash shown "
                "with it (`durable-tools pending` and `show` print it)",
                run_id=self.run_id,
                call_id=str(call_id)[:MAX_CALL_ID_CHARS],
            )
        found = await self.find_request(call_id, arguments_hash=arguments_hash)
        return await found.run._send(
            found.approval, approve, decider, groups, reason, grant, timeout
        )

    async def _send(
        self,
        approval: PendingApproval,
        approve: bool,
        person: str,
        groups: Iterable[str],
        reason: str | None,
        grant: GrantRequest | None,
        timeout: float,
    ) -> DecisionRecorded:
        """Send a checked person's decision on `approval` to this run (which waits for it)."""
        call_id = approval.call_id
        name = decider_name(person, groups, approval.deciders) if isinstance(person, str) else None
        if name is None:
            allowed = ", ".join(approval.deciders) or "anyone with a person's name"
            raise NotADecider(
                f"{person!r} may not decide call {call_id} of run {self.run_id} (deciders: "
                f"{allowed}); a decider is one person's name, checked as the run checks it",
                run_id=self.run_id,
                call_id=call_id,
                deciders=approval.deciders,
            )
        try:
            decision = ApprovalDecision(
                call_id=call_id,
                approve=approve,
                decider=name,
                reason=reason or None,
                arguments_hash=approval.arguments_hash,
                grant=grant,
            )
        except ValidationError as error:
            problem = error.errors(include_url=False, include_input=False)[0]
            raise MalformedDecision(
                f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}",
                run_id=self.run_id,
                call_id=call_id,
            ) from None
        try:
            verdict = await asyncio.wait_for(self.send_decision(decision), timeout)
        except WorkflowUpdateFailedError as error:
            raise await self._refusal(approval, error) from None
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
            raise DecisionTimedOut(
                f"no worker of run {self.run_id} took the decision within {timeout:.0f} s: "
                "it is not recorded (were the worker to come back soon it may still be; "
                "`durable-tools show` tells)",
                run_id=self.run_id,
                call_id=call_id,
            ) from None
        except RPCError as error:
            raise await unreachable(self.handle, call_id, error) from None
        return DecisionRecorded(self.run_id, call_id, verdict, name, approval.arguments_hash)

    async def _refusal(
        self, approval: PendingApproval, error: WorkflowUpdateFailedError
    ) -> DecisionError:
        """Why the run refused a decision on `approval`, from what it records now."""
        call_id = approval.call_id
        cause = error.cause
        message = getattr(cause, "message", None) or str(cause or error)
        rejected = RejectedByRun(
            f"rejected by run {self.run_id}: {message}", run_id=self.run_id, call_id=call_id
        )
        try:
            snapshot = await asyncio.wait_for(self.status(), LOOKUP_TIMEOUT)
            if any(a.arguments_hash == approval.arguments_hash for a in snapshot.pending_approvals):
                return rejected  # still pending as shown: refused for another reason
            decided = await asyncio.wait_for(self._decided(call_id), LOOKUP_TIMEOUT)
        except (TimeoutError, RPCError, WorkflowQueryFailedError):
            return rejected
        if decided is not None:
            return AlreadyDecided(decided, run_id=self.run_id)
        return rejected

    async def _decided(self, call_id: str) -> ToolCallRecord | None:
        """The run's record of the latest decision on `call_id` (its own calls first, then
        its running sub-agents'); None when it records none."""
        timeline = await self.timeline()
        mine = [r for r in timeline if r.call_id == call_id and r.decided_by is not None]
        if mine:
            return mine[-1]
        for child in await self._answering_subagents(timeline):
            try:
                found = await child._decided(call_id)
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                continue
            if found is not None:
                return found
        return None

    # ------------------------------------------------------- decisions sent as given

    async def decide(
        self,
        call_id: str,
        *,
        approve: bool,
        decider: str = "anonymous",
        reason: str | None = None,
        arguments_hash: str | None = None,
        grant: GrantRequest | None = None,
    ) -> str:
        """Approve or deny a pending call as given. Raises if the run's validator rejects
        the decision (`WorkflowUpdateFailedError`).

        Code that shows requests to people should use `decide_request`, which checks the
        request, the hash and the decider first and says in a typed error why nothing was
        recorded. This sends the decision as it is and leaves every check to the run:
        pass the `arguments_hash` of the `PendingApproval` you showed, and the run accepts
        the decision only for exactly those arguments. Without a hash the decision applies
        to whatever is pending under `call_id` when it arrives, and the run accepts that
        only while the id has been used by a single call: once it is reused, the hash is
        required.

        A call pending in a sub-agent of this run may be decided through this run: the
        decision goes to the sub-agent run that waits for it.

        With `grant`, an approval also stops asking: a standing grant for the tool, for the
        run or the run's identity, optionally bounded by argument constraints.
        """
        found = await self.find_approval(call_id)
        target = found[0] if found is not None else self
        return await target.send_decision(
            ApprovalDecision(
                call_id=call_id,
                approve=approve,
                decider=decider,
                reason=reason,
                arguments_hash=arguments_hash,
                grant=grant,
            )
        )

    async def send_decision(self, decision: ApprovalDecision) -> str:
        """Send a decision to this very run (no sub-agent lookup); returns the verdict."""
        return await self._update("decide", decision, str)

    async def approve(
        self,
        call_id: str,
        *,
        decider: str = "anonymous",
        reason: str | None = None,
        arguments_hash: str | None = None,
        grant: GrantRequest | None = None,
    ) -> str:
        """Approve a pending call as given; pass the hash you showed (see `decide`)."""
        return await self.decide(
            call_id,
            approve=True,
            decider=decider,
            reason=reason,
            arguments_hash=arguments_hash,
            grant=grant,
        )

    async def deny(
        self,
        call_id: str,
        *,
        decider: str = "anonymous",
        reason: str | None = None,
        arguments_hash: str | None = None,
    ) -> str:
        """Deny a pending call as given; pass the hash you showed (see `decide`)."""
        return await self.decide(
            call_id, approve=False, decider=decider, reason=reason, arguments_hash=arguments_hash
        )

    async def decide_batch(
        self,
        decisions: Sequence[tuple[str, bool, str]],
        *,
        decider: str = "anonymous",
        reason: str | None = None,
    ) -> list[str]:
        """Decide several pending calls of this run at once: `(call_id, approve, hash)` each.

        Every item must carry the arguments hash of the call it decides; the run checks all
        of them before applying any, so one stale or unknown item rejects the whole batch.
        """
        batch = BatchDecision(
            items=tuple(
                BatchItem(call_id=call_id, approve=approve, arguments_hash=arguments_hash)
                for call_id, approve, arguments_hash in decisions
            ),
            decider=decider,
            reason=reason,
        )
        return await self._update("decide_batch", batch, list[str])

    # ------------------------------------------- the live policy and standing grants

    async def policy(self) -> ApprovalPolicy | None:
        """The run's live approval policy."""
        return (await self.status()).policy

    async def set_policy(
        self, policy: ApprovalPolicy, *, changed_by: str = "anonymous", reason: str | None = None
    ) -> str:
        """Replace the run's live approval policy (recorded in its events with who and why)."""
        change = PolicyChange(policy=policy, changed_by=changed_by, reason=reason)
        return await self._update("set_policy", change, str)

    async def grants(self) -> list[StandingGrant]:
        """The run's run-scoped standing grants (revoked ones included)."""
        return (await self.status()).standing_grants

    async def revoke_grant(self, grant_id: str, *, revoked_by: str = "anonymous") -> str:
        """Revoke a run-scoped standing grant; the tool's next calls are asked again."""
        revocation = GrantRevocation(grant_id=grant_id, revoked_by=revoked_by)
        return await self._update("revoke_grant", revocation, str)

    # --------------------------------------- a session's messages (docs/sessions.md)

    async def send(self, text: str, *, message_id: str | None = None) -> SessionReply:
        """Send a session its next message and wait for the answer (docs/sessions.md).

        For a turn that may wait on people for long, `start_send` and wait later.

        Raises:
            SessionRefused: the run refused it (not a session, ended or closing, busy
                answering another message, empty or too long).
        """
        sent = await self.start_send(text, message_id=message_id)
        return await sent.result()

    async def start_send(self, text: str, *, message_id: str | None = None) -> SentMessage:
        """Send a session its next message; return once the run accepted it.

        Args:
            text: The user's message.
            message_id: The message's id (its update's; unique per run): a retry with the
                same id while the run holds it does not send it twice. Default: a new one.

        Raises:
            SessionRefused: as for `send`.
        """
        return await start_message(self.handle, self.prefix + "send_message", text, message_id)

    def message(self, message_id: str, *, workflow_run_id: str | None = None) -> SentMessage:
        """A message sent before, by its id, to wait for its answer (`SentMessage.result`).

        Args:
            message_id: `SentMessage.id`.
            workflow_run_id: `SentMessage.workflow_run_id`: needed once the session has
                continued-as-new since (the answer is in the run that took the message).
        """
        return message_handle(self.handle, message_id, workflow_run_id)

    async def close(self, reason: str | None = None) -> str:
        """End a session: now when it awaits a message, else after the current answer.

        Raises:
            SessionRefused: not a session, or it has ended or is closing already.
        """
        return await close_session(self.handle, self.prefix + "close", reason)

    # ----------------------------------------------------------- steering and ending

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

    # ---------------------------------------------------- callback tools served here

    async def serve_callbacks(
        self, handlers: Mapping[str, Callable[..., Any]], *, poll_interval: float = 0.5
    ) -> int:
        """Run this run's callback tools here until it ends (see `_callbacks_client`):
        `handlers` maps tool names to callables taking the arguments as keywords."""
        return await serve_callbacks(
            self.handle, handlers, poll_interval=poll_interval, prefix=self.prefix
        )
