"""Deciding a run's approvals and its policy: the part of `AgentRun` people decide with.

`AgentRun.decide_request` is the one way a surface that shows requests to people decides
one (the command line, the inbox, and every later one): it finds the request in the run
or a running sub-agent, checks the arguments hash and the decider against it, sends the
decision, and raises a `DecisionError` that says why nothing was recorded. Surfaces only
turn those errors into exit codes or HTTP statuses. Who decided a call is read from the
run's structured state (the call's record, `ToolCallRecord.decided_by`), never from text.

`decide`, `approve` and `deny` send a decision as given and leave every check to the run
(its update validator); they raise Temporal's `WorkflowUpdateFailedError` on a refusal.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError
from temporalio.client import (
    WorkflowExecutionDescription,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_tools._encrypted import ENCRYPTED_NOTE, is_encrypted_payload_error
from durable_tools._render import render_decision
from durable_tools._run_base import RunBase, has_workers
from durable_tools.protocol._deciders import decider_name
from durable_tools.protocol._limits import MAX_CALL_ID_CHARS, MAX_REASON_CHARS
from durable_tools.workflows import (
    ApprovalDecision,
    ApprovalPolicy,
    BatchDecision,
    BatchItem,
    GrantRequest,
    GrantRevocation,
    PendingApproval,
    PolicyChange,
    StandingGrant,
    ToolCallRecord,
)

__all__ = [
    "DECIDE_TIMEOUT",
    "LOOKUP_TIMEOUT",
    "AlreadyDecided",
    "AmbiguousRequest",
    "DecisionError",
    "DecisionRecorded",
    "DecisionTimedOut",
    "MalformedDecision",
    "NotADecider",
    "NothingPending",
    "PendingRequest",
    "RejectedByRun",
    "RunDecisions",
    "RunEnded",
    "RunNotFound",
    "RunUnreadable",
    "StaleRequest",
    "WorkerUnavailable",
    "arguments_hash_given",
    "stale_request",
]

DECIDE_TIMEOUT = 30.0
"""Seconds a decision may wait for the run's worker to take it."""
LOOKUP_TIMEOUT = 10.0
"""Seconds the run's worker has to say what is pending (a live worker answers at once)."""

_HASH = re.compile(r"[0-9a-f]{64}")


class DecisionError(Exception):
    """A decision that was not recorded; the message says why and what to do.

    Attributes:
        message: The reason, for a person (it may quote the call id: escape it for a
            terminal or a page).
        run_id: The run the decision was meant for.
        call_id: The call it was meant for.
    """

    def __init__(self, message: str, *, run_id: str, call_id: str) -> None:
        super().__init__(message)
        self.message = message
        self.run_id = run_id
        self.call_id = call_id


class MalformedDecision(DecisionError):
    """The decision itself is malformed (hash, call id, reason, decider's name): nothing
    was asked of the run."""


class RunNotFound(DecisionError):
    """No run has this id in the namespace."""


class RunEnded(DecisionError):
    """The run has ended: nothing waits in it any more.

    Attributes:
        status: How it ended, as Temporal says it (`COMPLETED`, `CANCELED`, ...).
    """

    def __init__(self, message: str, *, run_id: str, call_id: str, status: str) -> None:
        super().__init__(message, run_id=run_id, call_id=call_id)
        self.status = status


class WorkerUnavailable(DecisionError):
    """No worker polls the run's task queue, or none answered: the decision was not sent.

    Attributes:
        task_queue: The run's task queue, where a worker must run.
    """

    def __init__(self, message: str, *, run_id: str, call_id: str, task_queue: str) -> None:
        super().__init__(message, run_id=run_id, call_id=call_id)
        self.task_queue = task_queue


class DecisionTimedOut(DecisionError):
    """The decision was sent but no worker took it in time: it is not recorded (if the
    run's worker comes back soon it may still be; `AgentRun.timeline` tells)."""


class RunUnreadable(DecisionError):
    """The run's payloads are encrypted and this client has no keys to read them."""


class NothingPending(DecisionError):
    """No approval is pending for the call (and the run records no decision of it).

    Attributes:
        pending: The call ids that do wait for a decision in the run and its sub-agents.
    """

    def __init__(self, message: str, *, run_id: str, call_id: str, pending: Sequence[str]) -> None:
        super().__init__(message, run_id=run_id, call_id=call_id)
        self.pending = tuple(pending)


class AlreadyDecided(DecisionError):
    """Someone decided the call first (read from the run's record of the call).

    Attributes:
        approved: Whether it was approved.
        decided_by: Who decided (`deadline` when it expired).
        decided_at: When the run recorded the decision.
        reason: The reason they gave.
    """

    def __init__(self, record: ToolCallRecord, *, run_id: str) -> None:
        super().__init__(
            f"call {record.call_id} of run {run_id} was already {render_decision(record)}; "
            "nothing is pending under it",
            run_id=run_id,
            call_id=record.call_id,
        )
        self.approved = record.status != "denied"
        self.decided_by: str = record.decided_by or ""
        self.decided_at: datetime | None = record.decided_at
        self.reason = record.decision_reason


class StaleRequest(DecisionError):
    """The arguments hash given names no request pending under the call id: the call
    pending now is not the one the person saw (a model may reuse a call id)."""


class AmbiguousRequest(DecisionError):
    """Several requests (in the run and its sub-agents) match: the decision must be sent
    to the run that waits for it.

    Attributes:
        run_ids: The runs that wait for a request under the call id.
    """

    def __init__(self, message: str, *, run_id: str, call_id: str, run_ids: Sequence[str]) -> None:
        super().__init__(message, run_id=run_id, call_id=call_id)
        self.run_ids = tuple(run_ids)


class NotADecider(DecisionError):
    """The decider may not decide this call (not named by its policy, not in a group it
    names, or a name that is no person's).

    Attributes:
        deciders: Who may (empty: anyone with a person's name).
    """

    def __init__(self, message: str, *, run_id: str, call_id: str, deciders: Sequence[str]) -> None:
        super().__init__(message, run_id=run_id, call_id=call_id)
        self.deciders = tuple(deciders)


class RejectedByRun(DecisionError):
    """The run's own check refused the decision for another reason (a second approval
    by the same person, a grant the policy does not allow, ...)."""


@dataclass(frozen=True)
class PendingRequest:
    """A request waiting for a person, with the run that waits for it."""

    run: RunDecisions
    """The run that waits: the one asked, or one of its sub-agents."""
    approval: PendingApproval
    """The request as a person should see it (tool, arguments, hash, deciders)."""


@dataclass(frozen=True)
class DecisionRecorded:
    """A decision the run recorded."""

    run_id: str
    """The run that recorded it (a sub-agent's when the call was one of its calls)."""
    call_id: str
    verdict: str
    """`approved`, `denied`, or `approved (1 of 2)` while a quorum is not reached."""
    decider: str
    """The name recorded (`alice`, or `alice via group:ops`)."""
    arguments_hash: str
    """The hash of the request decided."""


def stale_request(run_id: str, call_id: str) -> StaleRequest:
    """The refusal of a hash that names no request pending under `call_id`."""
    return StaleRequest(
        f"the request pending for call {call_id} in run {run_id} has another arguments hash "
        "than the one given: it is not the request you saw (the model may have reused the "
        "call id with other arguments), so nothing was decided; look at it again with "
        "`durable-tools pending`",
        run_id=run_id,
        call_id=call_id,
    )


def arguments_hash_given(given: object, *, run_id: str = "", call_id: str = "") -> str:
    """An arguments hash as given by a person or a client: the full 64 hexadecimal
    characters (surrounding blanks dropped, capitals read as small letters).

    A prefix is refused rather than completed: a prefix short enough to type (12 hex
    characters are 48 bits) can be matched by arguments chosen for it, so it would not
    name the request the person reviewed.

    Raises:
        MalformedDecision: anything else (saying what form is expected).
    """
    digest = given.strip().lower() if isinstance(given, str) else None
    if digest is None or len(digest) != 64 or not _HASH.fullmatch(digest):
        got = f"{len(given)} characters" if isinstance(given, str) else type(given).__name__
        raise MalformedDecision(
            "the arguments hash must be the full hash, 64 hexadecimal characters 0-9 a-f "
            f"(got {got}): copy it from where the request is shown (`durable-tools pending` "
            "or `show`); a prefix is not accepted, since arguments can be chosen to share one",
            run_id=run_id,
            call_id=call_id,
        )
    return digest


class RunDecisions(RunBase):
    """Deciding a run's approvals and its policy: the part of `AgentRun` people decide with."""

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
    ) -> list[RunDecisions]:
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

    def _other(self, run_id: str) -> RunDecisions:
        """The handle on another run (a sub-agent's), reached the same way."""
        return type(self)(self.client, run_id)

    async def find_approval(self, call_id: str) -> tuple[RunDecisions, PendingApproval] | None:
        """The approval pending for `call_id` in this run or one of its running sub-agents,
        with the run that waits for it; None when no such approval is pending."""
        for approval in (await self.status()).pending_approvals:
            if approval.call_id == call_id:
                return self, approval
        for run_id, approval in await self.subagent_approvals():
            if approval.call_id == call_id:
                return self._other(run_id), approval
        return None

    # ------------------------------------------------------ the one decide path

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
        task_queue = (await self._open_run(call_id)).task_queue
        if not await has_workers(self.client, task_queue):
            raise WorkerUnavailable(
                f"no worker polls task queue {task_queue} of run {self.run_id}: nothing was "
                "decided; start one (`durable-tools worker --tools MODULE --task-queue ...`)",
                run_id=self.run_id,
                call_id=call_id,
                task_queue=task_queue,
            )
        async with self._asking(call_id, task_queue):
            everything = await asyncio.wait_for(self.pending_approvals(), LOOKUP_TIMEOUT)
        waiting = [(run_id, a) for run_id, a in everything if a.call_id == call_id]
        if not waiting:
            async with self._asking(call_id, task_queue):
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
            raise await self._unreachable(call_id, error) from None
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

    async def _open_run(self, call_id: str) -> WorkflowExecutionDescription:
        """The run's description, when it is open.

        Raises:
            RunNotFound, RunEnded: it is not.
        """
        try:
            description = await self.handle.describe()
        except RPCError as error:
            raise await self._unreachable(call_id, error) from None
        if description.close_time is not None:
            raise self._ended(call_id, description)
        return description

    def _ended(self, call_id: str, description: WorkflowExecutionDescription) -> RunEnded:
        status = description.status.name if description.status is not None else "UNKNOWN"
        return RunEnded(
            f"run {self.run_id} has ended ({status}): nothing waits in it, so nothing was decided",
            run_id=self.run_id,
            call_id=call_id,
            status=status,
        )

    async def _unreachable(
        self, call_id: str, error: RPCError, task_queue: str = ""
    ) -> DecisionError:
        """The error for an RPC the server refused while deciding `call_id`.

        Raises:
            RPCError: `error` itself, when it says nothing about the run (no server, no
                rights): the caller's connection handling says that best.
        """
        if error.status == RPCStatusCode.NOT_FOUND:
            try:  # ended since (a signal or update to a closed run is "not found"), or never was
                description = await self.handle.describe()
            except RPCError:
                description = None
            if description is not None and description.close_time is not None:
                return self._ended(call_id, description)
            return RunNotFound(
                f"no run {self.run_id!r} in this namespace", run_id=self.run_id, call_id=call_id
            )
        if error.status == RPCStatusCode.FAILED_PRECONDITION:
            # "no poller seen for task queue recently": the worker died or stopped.
            return WorkerUnavailable(
                f"the worker of run {self.run_id} is not polling its task queue (it stopped "
                "or died): nothing was decided; start one and decide again",
                run_id=self.run_id,
                call_id=call_id,
                task_queue=task_queue,
            )
        raise error

    @asynccontextmanager
    async def _asking(self, call_id: str, task_queue: str) -> AsyncIterator[None]:
        """Turn what can go wrong while asking the run what is pending into a
        `DecisionError`."""
        try:
            yield
        except TimeoutError:
            raise WorkerUnavailable(
                f"the worker of run {self.run_id} did not answer within {LOOKUP_TIMEOUT:.0f} s "
                f"(is it running? task queue {task_queue}): nothing was decided",
                run_id=self.run_id,
                call_id=call_id,
                task_queue=task_queue,
            ) from None
        except RPCError as error:
            raise await self._unreachable(call_id, error, task_queue) from None
        except WorkflowQueryFailedError as error:
            raise RejectedByRun(
                f"run {self.run_id} did not say what is pending: {error}",
                run_id=self.run_id,
                call_id=call_id,
            ) from None
        except KeyError as error:
            if not is_encrypted_payload_error(error):
                raise
            raise RunUnreadable(
                f"this client cannot read run {self.run_id}: {ENCRYPTED_NOTE}",
                run_id=self.run_id,
                call_id=call_id,
            ) from None

    # ------------------------------------------------ decisions sent as given

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
