"""Continue-as-new: when a run's history grows long, carry its state into a fresh one.

What is carried does not grow with the chain's age, so neither does each run's history
(the carried input is recorded twice: in this run's continued-as-new event and in the
next run's started event): the conversation the snapshot holds is carried by reference
only (the new run carries just the messages after it), and of the timeline and events
only what this run added. The carried input is measured before it leaves: if it still
would not fit, the kept timeline and events shrink, and an input that still would not
fit ends the run with a reason instead of wedging it.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from temporalio import workflow
from temporalio.workflow import ContinueAsNewVersioningBehavior

from durable_tools.messages import Message
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES, payload_bytes
from durable_tools.protocol._run_io import AgentInput
from durable_tools.protocol._types import AgentConfig, RunStatus
from durable_tools.workflows.run._carry import CARRY_LIMIT, carry_state
from durable_tools.workflows.run._state import EndRun, RunState

__all__ = [
    "CANCEL_BEFORE_CONTINUE_PATCH",
    "continue_as_new_due",
    "continue_now",
    "let_a_cancel_in",
    "maybe_continue_as_new",
]

CANCEL_BEFORE_CONTINUE_PATCH = "cancel-before-continue-as-new"
"""Asked at each continue-as-new: the run waits one activation for a cancellation first
(`let_a_cancel_in`); a run recorded before continued at once."""


async def maybe_continue_as_new(state: RunState) -> None:
    """Continue-as-new when the server suggests it, the configured event count is reached,
    or a run that may change builds sees another build current."""
    if not continue_as_new_due(state):
        return
    # Handlers may still be mid-flight (an update that arrived this task): let them end,
    # so nothing a caller was promised is dropped by the new run.
    await workflow.wait_condition(workflow.all_handlers_finished)
    if await let_a_cancel_in(state):
        state.check_cancelled()
        await workflow.wait_condition(workflow.all_handlers_finished)
    continue_now(state)


async def let_a_cancel_in(state: RunState) -> bool:
    """Give a cancellation that came in with what ended the turn the time to arrive.

    Temporal can hand the workflow a cancellation request that arrived in the same
    workflow task as, say, a decision only in an activation after the one the decision
    came in. Continued as new within the first one, the run never heard of it, and the
    new run went on as if nobody had cancelled. A 1 ms timer ends the activation (the
    cancellation, when there is one, comes in before it fires).

    Returns:
        False for a run recorded before this wait existed (it continued at once).
    """
    if not workflow.patched(CANCEL_BEFORE_CONTINUE_PATCH):
        return False
    with contextlib.suppress(TimeoutError):
        await workflow.wait_condition(
            lambda: state.cancel_reason is not None,
            timeout=timedelta(milliseconds=1),
            timeout_summary="a cancellation, before continue-as-new",
        )
    return True


def _upgrades(config: AgentConfig) -> bool:
    """Whether the run moves to the current build at its continue-as-new."""
    return config.versioning != "pinned"


def continue_as_new_due(state: RunState) -> bool:
    """Whether the server suggests continue-as-new, the configured event count is reached,
    or (for a run that may change builds) another build is current."""
    info = workflow.info()
    limit = state.config.continue_as_new_after_events
    # A run that may change builds moves at its continue-as-new: so it continues as new
    # once the server says another build is current (recorded in history: replay-safe).
    return (
        info.is_continue_as_new_suggested()
        or (limit is not None and info.get_current_history_length() >= limit)
        or (_upgrades(state.config) and info.is_target_worker_deployment_version_changed())
    )


def continue_now(state: RunState) -> None:
    """Continue the run as new, carrying its state; the caller has let its handlers end.

    Raises:
        ContinueAsNewError: always (how the SDK continues a workflow as new).
        EndRun: the carried state would not fit in one payload.
    """
    info = workflow.info()
    upgrades = _upgrades(state.config)
    detail = f"{info.get_current_history_length()} events"
    state.event("run.continuing_as_new", detail=detail + (", onto the current build" * upgrades))
    conversation, offset = state.conversation, state.offset
    if state.snapshot is not None:
        # What the snapshot holds is carried by reference only: the model activity reads
        # it from the store, and `AgentRun.conversation()` joins it to the rest.
        conversation = conversation[state.snapshot_length - offset :]
        offset = state.snapshot_length
    workflow.continue_as_new(
        _fitting_input(state, conversation, offset),
        # The new run's first task goes to the current build (unversioned: no effect).
        initial_versioning_behavior=ContinueAsNewVersioningBehavior.AUTO_UPGRADE
        if upgrades
        else None,
    )


def _fitting_input(state: RunState, conversation: list[Message], offset: int) -> AgentInput:
    size = 0
    for keep in (CARRY_LIMIT, 50, 0):
        next_input = AgentInput(
            prompt=state.input.prompt,
            config=state.config,
            identity=state.input.identity,
            granted_scopes=state.input.granted_scopes,
            carried=carry_state(state, conversation, offset, keep=keep),
            # A sub-agent stays as deep as it was (its own sub-agents stay within the
            # root's depth limit) and keeps telling its parent what it waits for.
            depth=state.depth,
            max_depth=state.max_depth,
            report_to=state.input.report_to,
            report_token=state.input.report_token,
        )
        size = payload_bytes(next_input)
        if size <= PAYLOAD_BUDGET_BYTES:
            if keep < CARRY_LIMIT:
                # Said in this run's history: the next run starts with fewer records.
                state.event("run.carried_less", detail=f"kept the last {keep} timeline entries")
            return next_input
    raise EndRun(
        RunStatus.FAILED,
        f"cannot continue-as-new: the carried state is {size:,} bytes, over the "
        f"{PAYLOAD_BUDGET_BYTES:,}-byte payload budget",
    )
