"""A run's state at its start, and what it carries into the next run of its chain.

A new run starts empty; a run continued-as-new starts from the `CarriedState` its
predecessor built (`carry_state`), which holds only what does not grow with the chain's
age (see `loop/_continue.py`).
"""

from __future__ import annotations

from durable_tools.messages import Message, Usage
from durable_tools.protocol._run_io import AgentInput, CarriedState
from durable_tools.tools._catalog_pack import unpack
from durable_tools.workflows.run._catalog_state import CatalogState
from durable_tools.workflows.run._model_use import ModelUse
from durable_tools.workflows.run._run_calls import RunCalls
from durable_tools.workflows.run._session import Session
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._wait_maps import GateState, ParentReport

__all__ = ["CALL_IDS_CARRIED", "CARRY_FLOOR", "CARRY_LIMIT", "carry_state", "start_state"]

CARRY_LIMIT = 500
"""Most timeline entries and events kept across continue-as-new; older ones stay readable
in the earlier runs' histories."""

CARRY_FLOOR = 50
"""Timeline entries and events a continued run carries even when it added fewer itself."""

CALL_IDS_CARRIED = 2_000
"""Most call ids a continued run carries (about 12 B each). A chain that used more stops
carrying them: from its next run on, idempotency keys name the run of the chain (so they
stay distinct without the list) and every approval decision must carry its arguments hash.
Without the bound, a chain of some 150,000 calls would carry more than Temporal accepts as
one payload (2 MB) and could not continue."""


def start_state(input: AgentInput) -> RunState:
    """The state of a new run, or of a run continued from `input.carried`."""
    config = input.config
    max_depth = input.max_depth if input.max_depth is not None else config.max_subagent_depth
    carried = input.carried
    session = None
    if config.session is not None:
        session = Session.start(config.session, carried.session if carried else None, input.prompt)
    if carried is None:
        return RunState(
            input=input,
            config=config,
            conversation=[],
            gates=GateState(policy=config.approval),
            depth=input.depth,
            max_depth=max_depth,
            session=session,
        )
    packed = carried.catalog_packed
    return RunState(
        input=input,
        config=config,
        conversation=list(carried.conversation),
        catalog=CatalogState(
            specs=unpack(packed) if packed is not None else list(carried.catalog),
            packed=packed,
            discovered=list(carried.discovered),
            max_advertised=config.max_advertised_tools if packed is not None else None,
        ),
        turn=carried.turn,
        tool_calls=carried.tool_calls,
        timeline=list(carried.timeline),
        events=list(carried.events),
        events_total=(
            carried.events_total if carried.events_total is not None else len(carried.events)
        ),
        steer=list(carried.pending_steer),
        continued=carried.continued,
        offset=carried.conversation_offset,
        snapshot=carried.snapshot,
        snapshot_length=carried.snapshot_length,
        model=ModelUse(
            usage=carried.usage or Usage(),
            fallback_usage=dict(carried.fallback_usage),
            context=carried.context,
            context_tokens=carried.context_tokens,
            compactions=carried.compactions,
        ),
        calls=RunCalls(
            uses=dict(carried.call_uses),
            ids_dropped=carried.call_ids_dropped,
            budget_used=dict(carried.budget_used),
        ),
        gates=GateState(
            policy=carried.policy or config.approval,
            standing_grants=list(carried.standing_grants),
            report=ParentReport(carried.notices_sent),
        ),
        output_repairs=carried.output_repairs,
        timeline_carried_in=len(carried.timeline),
        events_carried_in=(
            carried.events_total if carried.events_total is not None else len(carried.events)
        ),
        depth=input.depth,
        max_depth=max_depth,
        session=session,
        final_answer=carried.session.answer if carried.session else None,
        output=carried.session.output if carried.session else None,
    )


def carry_state(
    state: RunState, conversation: list[Message], offset: int, *, keep: int = CARRY_LIMIT
) -> CarriedState:
    """What the next run of this chain starts from.

    Of the timeline and events, the entries this run added are carried, or the last
    `CARRY_FLOOR` when it added fewer, and at most `keep`: carrying all that is kept
    would make each run's input, and so its history, grow with the chain's age until
    `keep` is reached. Older ones stay readable in the earlier runs' histories.
    """
    drop_ids = state.calls.ids_dropped or len(state.calls.uses) > CALL_IDS_CARRIED
    own_timeline = len(state.timeline) - state.timeline_carried_in
    own_events = state.events_total - state.events_carried_in
    keep_timeline = min(keep, max(own_timeline, CARRY_FLOOR))
    keep_events = min(keep, max(own_events, CARRY_FLOOR))
    return CarriedState(
        conversation=conversation,
        conversation_offset=offset,
        snapshot=state.snapshot,
        snapshot_length=state.snapshot_length,
        turn=state.turn,
        tool_calls=state.tool_calls,
        catalog=[] if state.catalog.packed is not None else state.catalog.specs,
        catalog_packed=state.catalog.packed,
        timeline=state.timeline[-keep_timeline:] if keep_timeline else [],
        events=state.events[-keep_events:] if keep_events else [],
        events_total=state.events_total,
        pending_steer=state.steer,
        discovered=state.catalog.discovered,
        call_uses={} if drop_ids else state.calls.uses,
        call_ids_dropped=drop_ids,
        budget_used=state.calls.budget_used,
        usage=state.model.usage,
        fallback_usage=state.model.fallback_usage,
        output_repairs=state.output_repairs,
        context=state.model.context,
        context_tokens=state.model.context_tokens,
        compactions=state.model.compactions,
        continued=state.continued + 1,
        policy=None if state.gates.policy == state.config.approval else state.gates.policy,
        standing_grants=state.gates.standing_grants,
        notices_sent=state.gates.report.sent,
        session=(
            state.session.carried(state.final_answer, state.output)
            if state.session is not None
            else None
        ),
    )
