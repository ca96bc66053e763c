"""Stage 1 of a call: validate it, or answer the model with a repair message; then count
it against its tool's per-run budget (`max_calls_per_run`).

Unknown tools, malformed JSON, schema violations and arguments too large to schedule
never reach an activity; the model is told what was wrong under the same call id.

A call counts once it passed validation, whatever happens to it next (denied, failed,
retried: one call). It is counted before it runs, so calls of one turn running in
parallel cannot overspend. A call over the budget never runs; the model is told that the
budget is used up, under the same call id, so it can finish with what it has. The counts
are carried over continue-as-new.
"""

from __future__ import annotations

from typing import Any

from durable_tools.messages import Message, ToolCall
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES, payload_bytes
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import RunStatus
from durable_tools.tools import ErrorKind, InvalidArguments, ToolNotFound, ToolSpec
from durable_tools.tools._formatting import abridge_arguments, redact_arguments
from durable_tools.tools._names import alias_provider
from durable_tools.tools._validation import check_arguments
from durable_tools.workflows.run._replies import invalid_reply, over_budget_reply
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["spend_budget", "validate_call"]

# Arguments the model wrote in fewer characters than this cannot encode past the budget
# (at most 6 bytes a character, with room for the rest of the activity input).
_UNMEASURED_CHARS = (PAYLOAD_BUDGET_BYTES - 64_000) // 6


def validate_call(
    state: RunState, call: ToolCall, offered: dict[str, ToolSpec], record: ToolCallRecord
) -> ValidCall | Message:
    """The validated call, or the repair message the model gets instead.

    Raises:
        EndRun: the call is invalid and the agent's `on_invalid_call` is `fail`.
    """
    provider = alias_provider(state.config.model)
    spec = offered.get(call.name) or _by_alias(offered, call.name, provider)
    try:
        if spec is None:
            raise ToolNotFound(f"unknown tool {call.name[:64]!r}")
        checked = check_arguments(spec, call.arguments)
        arguments = checked.values
        _check_size(call, arguments)
    except (InvalidArguments, ToolNotFound) as error:
        record.status = "invalid"
        record.error_kind = error.kind.value
        record.result = error.message[:300]
        state.event("tool.invalid_args", call, detail=error.message[:300])
        if state.config.on_invalid_call == "fail":
            raise EndRun(
                RunStatus.FAILED,
                f"invalid tool call {call.id[:64]!r} to {call.name[:64]!r}: {error.message[:300]}",
            ) from None
        available = sorted(s.aliases.get(provider, s.name) for s in offered.values())
        return invalid_reply(call.id, call.name, error, available=available)
    redacted = redact_arguments(arguments, spec.safety.redact)
    record.arguments = abridge_arguments(redacted)
    if call.name != spec.name:  # called by its alias: every later stage sees the tool's name
        record.tool = spec.name
        call = call.model_copy(update={"name": spec.name})
    transport = "sub-agent" if spec.subagent is not None else spec.transport
    return ValidCall(call, spec, arguments, redacted, transport, checked.schema)


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


def _by_alias(offered: dict[str, ToolSpec], name: str, provider: str) -> ToolSpec | None:
    """The offered tool whose alias for `provider` is `name` (registration keeps it unique)."""
    return next((s for s in offered.values() if s.aliases.get(provider) == name), None)


def _check_size(call: ToolCall, arguments: dict[str, Any]) -> None:
    """Refuse arguments whose activity input would pass Temporal's payload limit."""
    if len(call.arguments) < _UNMEASURED_CHARS:
        return
    size = payload_bytes(arguments)
    if size > PAYLOAD_BUDGET_BYTES - 64_000:
        raise InvalidArguments(
            f"the arguments are {size:,} bytes encoded, over the "
            f"{PAYLOAD_BUDGET_BYTES - 64_000:,}-byte limit for one call",
            errors=[
                "$: arguments too large; pass large content by reference (a file path, a URL "
                "or an artifact id) instead of inline"
            ],
        )
