"""Stage 1b of a call: the tool's per-run budget (`max_calls_per_run`).

A call counts once it passed validation, whatever happens to it next (denied, failed,
retried: one call). It is counted here, before it runs, so calls of one turn running in
parallel cannot overspend. A call over the budget never runs; the model is told that the
budget is used up, under the same call id, so it can finish with what it has. The counts
are carried over continue-as-new.
"""

from __future__ import annotations

from durable_tools.messages import Message
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.tools import ErrorKind
from durable_tools.workflows.run._replies import over_budget_reply
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["spend_budget"]


def spend_budget(state: RunState, valid: ValidCall, record: ToolCallRecord) -> Message | None:
    """Count the call against its tool's budget; the model's answer if it is over it."""
    call, spec = valid.call, valid.spec
    limit = spec.policy.max_calls_per_run
    if limit is None:
        return None
    used = state.calls.budget_used.get(spec.name, 0)
    if used < limit:
        state.calls.budget_used[spec.name] = used + 1
        return None
    record.status = "invalid"
    record.error_kind = ErrorKind.BUDGET_EXHAUSTED.value
    record.result = f"budget of {limit} calls per run used up"
    state.event("tool.budget_exhausted", call, detail=record.result)
    return over_budget_reply(call.id, spec.name, limit)
