"""The decide operation's parts that are not the run's handle: its typed errors, the check
of an arguments hash as a person gives it, and the errors a refused lookup turns into.

`AgentRun.decide_request` (in `_agent_run`) is the one way a surface that shows requests to
people decides one (the command line, the inbox, and every later one): it finds the request
in the run or a running sub-agent, checks the arguments hash and the decider against it,
sends the decision, and raises a `DecisionError` from here that says why nothing was
recorded. Surfaces only turn those errors into exit codes or HTTP statuses. Who decided a
call is read from the run's structured state (the call's record,
`ToolCallRecord.decided_by`), never from text.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio.client import (
    WorkflowExecutionDescription,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_tools._encrypted import ENCRYPTED_NOTE, is_encrypted_payload_error
from durable_tools.client.render._text import render_decision
from durable_tools.workflows import ToolCallRecord

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
    "RejectedByRun",
    "RunEnded",
    "RunNotFound",
    "RunUnreadable",
    "StaleRequest",
    "WorkerUnavailable",
    "arguments_hash_given",
    "asking",
    "open_run",
    "run_ended",
    "stale_request",
    "unreachable",
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


async def open_run(handle: WorkflowHandle[Any, Any], call_id: str) -> WorkflowExecutionDescription:
    """The description of the run behind `handle`, when it is open.

    Raises:
        RunNotFound, RunEnded: it is not.
    """
    try:
        description = await handle.describe()
    except RPCError as error:
        raise await unreachable(handle, call_id, error) from None
    if description.close_time is not None:
        raise run_ended(handle.id, call_id, description)
    return description


def run_ended(run_id: str, call_id: str, description: WorkflowExecutionDescription) -> RunEnded:
    """The refusal of a decision for `call_id` of a run that has ended as `description` says."""
    status = description.status.name if description.status is not None else "UNKNOWN"
    return RunEnded(
        f"run {run_id} has ended ({status}): nothing waits in it, so nothing was decided",
        run_id=run_id,
        call_id=call_id,
        status=status,
    )


async def unreachable(
    handle: WorkflowHandle[Any, Any], call_id: str, error: RPCError, task_queue: str = ""
) -> DecisionError:
    """The error for an RPC the server refused while deciding `call_id` of `handle`'s run.

    Raises:
        RPCError: `error` itself, when it says nothing about the run (no server, no
            rights): the caller's connection handling says that best.
    """
    run_id = handle.id
    if error.status == RPCStatusCode.NOT_FOUND:
        try:  # ended since (a signal or update to a closed run is "not found"), or never was
            description = await handle.describe()
        except RPCError:
            description = None
        if description is not None and description.close_time is not None:
            return run_ended(run_id, call_id, description)
        return RunNotFound(f"no run {run_id!r} in this namespace", run_id=run_id, call_id=call_id)
    if error.status == RPCStatusCode.FAILED_PRECONDITION:
        # "no poller seen for task queue recently": the worker died or stopped.
        return WorkerUnavailable(
            f"the worker of run {run_id} is not polling its task queue (it stopped "
            "or died): nothing was decided; start one and decide again",
            run_id=run_id,
            call_id=call_id,
            task_queue=task_queue,
        )
    raise error


@asynccontextmanager
async def asking(
    handle: WorkflowHandle[Any, Any], call_id: str, task_queue: str
) -> AsyncIterator[None]:
    """Turn what can go wrong while asking `handle`'s run what is pending into a
    `DecisionError`."""
    run_id = handle.id
    try:
        yield
    except TimeoutError:
        raise WorkerUnavailable(
            f"the worker of run {run_id} did not answer within {LOOKUP_TIMEOUT:.0f} s "
            f"(is it running? task queue {task_queue}): nothing was decided",
            run_id=run_id,
            call_id=call_id,
            task_queue=task_queue,
        ) from None
    except RPCError as error:
        raise await unreachable(handle, call_id, error, task_queue) from None
    except WorkflowQueryFailedError as error:
        raise RejectedByRun(
            f"run {run_id} did not say what is pending: {error}",
            run_id=run_id,
            call_id=call_id,
        ) from None
    except KeyError as error:
        if not is_encrypted_payload_error(error):
            raise
        raise RunUnreadable(
            f"this client cannot read run {run_id}: {ENCRYPTED_NOTE}",
            run_id=run_id,
            call_id=call_id,
        ) from None
