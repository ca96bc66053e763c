"""The JSON API's bodies: what `/api/pending` answers, and the checks of a decision's body."""

from __future__ import annotations

from typing import Any

from ._pending import PendingList

__all__ = ["BodyRefused", "decision_body", "pending_json"]


class BodyRefused(ValueError):
    """A decision body the API refuses (400); the message says why."""


def pending_json(user: str, found: PendingList) -> dict[str, Any]:
    """`/api/pending`'s answer for one page."""
    return {
        "user": user,
        "pending": [
            {
                "run_id": item.run_id,
                "agent": item.agent,
                **item.approval.model_dump(mode="json"),
                "may_decide": item.may_decide,
            }
            for item in found.items
        ],
        "subagent_waits": [
            {
                **item.wait.model_dump(mode="json", exclude={"run_id"}),
                "run_id": item.run_id,
                "agent": item.agent,
                "waiting_run": item.wait.run_id,
            }
            for item in found.subagents
        ],
        "other_waits": [
            {
                "run_id": wait.run_id,
                "agent": wait.agent,
                "kind": wait.kind,
                "call_id": wait.call_id,
                "tool": wait.tool,
                "waiting_for": wait.waiting_for,
                "resume": wait.resume,
                "since": wait.since.isoformat(),
                "deadline": wait.deadline.isoformat() if wait.deadline else None,
            }
            for wait in found.waits
        ],
        "unreachable_runs": found.unreachable,
        "encrypted_runs": [
            {
                "run_id": run.run_id,
                "agent": run.agent,
                "awaiting_tool": run.tool,
                "pending_approvals": run.approvals,
            }
            for run in found.encrypted
        ],
        "hidden": found.hidden,
        "next_cursor": found.next_cursor,
    }


def decision_body(body: object) -> tuple[bool, object, object]:
    """`approve`, `arguments_hash` and `reason` of a decision body (the last two are
    checked by `decide`).

    Raises:
        BodyRefused: not a JSON object, or `approve` not a boolean.
    """
    if not isinstance(body, dict):
        raise BodyRefused("the body must be a JSON object")
    approve = body.get("approve")
    if not isinstance(approve, bool):
        raise BodyRefused("approve must be true or false")
    return approve, body.get("arguments_hash"), body.get("reason")
