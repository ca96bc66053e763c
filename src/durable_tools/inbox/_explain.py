"""The call page's plain-language lines for an approver who is not an engineer: whom the
run acts for, what happens at the deadline, and what "Approve and stop asking" allows.

Pure functions of what the run reports (its identity, the pending approval, the live
policy), so each sentence can be tested on its own.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from durable_tools.tools import Identity
from durable_tools.workflows import ApprovalPolicy, PendingApproval

__all__ = ["PROMPT_SHOWN_CHARS", "acts_for", "at_deadline", "grant_offer", "short_prompt"]

PROMPT_SHOWN_CHARS = 600
"""The part of the run's prompt the call page shows before "show all"."""


def acts_for(identity: Identity) -> str:
    """Whom the run acts for: `user alice of tenant acme`, or that it names nobody."""
    parts = []
    if identity.user:
        parts.append(f"user {identity.user}")
    if identity.tenant:
        parts.append(f"tenant {identity.tenant}")
    if not parts:
        return "no particular user or tenant (the run was started without an identity)"
    return " of ".join(parts)


def short_prompt(prompt: str | None) -> tuple[str, bool]:
    """The prompt cut to `PROMPT_SHOWN_CHARS` and whether it was cut."""
    if prompt is None:
        return "(not known: the run's start could not be read)", False
    if len(prompt) <= PROMPT_SHOWN_CHARS:
        return prompt, False
    return prompt[: PROMPT_SHOWN_CHARS - 1] + "…", True


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(seconds: float) -> str:
    left = timedelta(seconds=round(seconds))
    if left.days:
        return f"{left.days} d {left.seconds // 3600} h"
    hours, rest = divmod(left.seconds, 3600)
    if hours:
        return f"{hours} h {rest // 60} min"
    return f"{rest // 60} min {rest % 60} s" if rest >= 60 else f"{rest} s"


def at_deadline(approval: PendingApproval, policy: ApprovalPolicy | None, now: datetime) -> str:
    """What happens if nobody decides: denied, escalated to whom, or the run fails; when."""
    policy = policy or ApprovalPolicy()
    if approval.deadline is None:
        return "No deadline: the call waits until someone decides or the run is cancelled."
    left = (approval.deadline - now).total_seconds()
    when = f"At {_when(approval.deadline)} ({'in ' + _span(left) if left > 0 else 'now'})"
    told = " (the agent is told it was not approved)"
    denied = "it is denied" + (" and the run ends" if policy.on_deny == "end_run" else told)
    if policy.on_timeout == "fail":
        return f"{when}, if nobody has decided, the run fails."
    if policy.on_timeout == "escalate" and not approval.escalated and policy.escalate_to:
        then = policy.escalation_timeout_seconds or policy.timeout_seconds
        after = f" {_span(then)} later" if then else " at their deadline"
        return (
            f"{when}, if nobody has decided, it is escalated to "
            f"{', '.join(policy.escalate_to)}; if they do not decide either,{after} {denied}."
        )
    already = " It was escalated already." if approval.escalated else ""
    return f"{when}, if nobody has decided, {denied}.{already}"


def grant_offer(approval: PendingApproval) -> str | None:
    """What "Approve and stop asking" would allow, or None when it is not offered (a call
    that needs more than one approval cannot be granted ahead)."""
    if approval.approvals_required > 1:
        return None
    return (
        f"Every later call of {approval.tool} in this run, with any arguments, runs without "
        "asking anyone, until the run ends (no other expiry). It does not reach other runs. "
        "The run's deny list still applies, a change of its deciders or quorum sets the "
        "grant aside, and an operator can revoke it (durable-tools grants revoke)."
    )
