"""Who decided each approval, read back from a run's `approval.*` events (for older runs)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from durable_tools._run_base import RunBase
from durable_tools.workflows import (
    ApprovalDecision,
    ApprovalPolicy,
    BatchDecision,
    BatchItem,
    GrantRequest,
    GrantRevocation,
    PendingApproval,
    PolicyChange,
    RunEvent,
    StandingGrant,
    ToolCallRecord,
)

__all__ = ["RunDecisions", "with_decisions"]

_DECIDED = re.compile(r"(approved|denied) by (.*?)(?:: (.*))?", re.DOTALL)


def with_decisions(timeline: list[ToolCallRecord], events: list[RunEvent]) -> list[ToolCallRecord]:
    """Fill `decided_by`, `decided_at` and `decision_reason` from a run's events.

    Records that already carry a decider are kept. A call id asked about as often as it
    appears in the timeline pairs its decisions with its records in order; when a reused
    id makes the pairing ambiguous, its records are left as they are rather than guessed.
    """
    requested: dict[str, int] = {}
    outcomes: dict[str, list[tuple[str, RunEvent, str | None]]] = {}
    for event in events:
        if event.call_id is None:
            continue
        if event.event == "approval.requested":
            requested[event.call_id] = requested.get(event.call_id, 0) + 1
        elif event.event == "approval.decided":
            match = _DECIDED.fullmatch(event.detail or "")
            if match:
                entry = (match.group(2), event, match.group(3))
                outcomes.setdefault(event.call_id, []).append(entry)
        elif event.event == "approval.expired":
            entry = ("deadline", event, "no decision before the deadline")
            outcomes.setdefault(event.call_id, []).append(entry)
    by_call: dict[str, list[int]] = {}
    for index, record in enumerate(timeline):
        by_call.setdefault(record.call_id, []).append(index)
    filled = list(timeline)
    for call_id, indexes in by_call.items():
        if requested.get(call_id, 0) != len(indexes):
            continue
        for index, (decider, event, reason) in zip(
            indexes, outcomes.get(call_id, []), strict=False
        ):
            if filled[index].decided_by is None:
                filled[index] = filled[index].model_copy(
                    update={
                        "decided_by": decider,
                        "decided_at": event.at,
                        "decision_reason": reason,
                    }
                )
    return filled


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
        for record in timeline if timeline is not None else await self.timeline():
            if record.child_run_id and record.status == "running":
                found += await type(self)(self.client, record.child_run_id).pending_approvals()
        return found

    async def find_approval(self, call_id: str) -> tuple[RunDecisions, PendingApproval] | None:
        """The approval pending for `call_id` in this run or one of its running sub-agents,
        with the run that waits for it; None when no such approval is pending."""
        for approval in (await self.status()).pending_approvals:
            if approval.call_id == call_id:
                return self, approval
        for run_id, approval in await self.subagent_approvals():
            if approval.call_id == call_id:
                return type(self)(self.client, run_id), approval
        return None

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
        """Approve or deny a pending call. Raises if the run's validator rejects the decision.

        Pass the `arguments_hash` of the `PendingApproval` you showed the decider: the run
        then accepts the decision only for exactly those arguments, and rejects it if the
        call pending under that id has changed since (a model may reuse a call id in a
        later turn with other arguments). Without a hash the decision applies to whatever
        is pending under `call_id` when it arrives, and the run accepts that only while
        the id has been used by a single call: once it is reused, the hash is required.
        Code that shows requests to people should always pass it (the command line and
        the inbox do).

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
        """Approve a pending call; pass the hash you showed (see `decide`)."""
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
        """Deny a pending call; pass the hash you showed (see `decide`)."""
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
