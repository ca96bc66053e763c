"""A long chain stops carrying every call id it used (`CALL_IDS_CARRIED`), safely.

Each run of a chain carried every call id the chain had used (about 12 B each), so keys
and approvals stay distinct when a model reuses ids. Past the bound, a run carries none:
its keys name the run of the chain, and decisions must carry the arguments hash.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolContext, ToolRegistry
from durable_tools.protocol._run_io import CarriedState
from durable_tools.workflows import AgentInput, AgentWorkflow
from durable_tools.workflows.run._carry import CALL_IDS_CARRIED, carry_state, start_state
from durable_tools.workflows.run._state import RunState
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script


def _continued(state: RunState) -> RunState:
    return start_state(state.input.model_copy(update={"carried": carry_state(state, [], 0)}))


def test_a_chain_past_the_bound_stops_carrying_call_ids() -> None:
    state = start_state(AgentInput(prompt="p", config=AgentConfig(model="scripted:x")))
    state.calls.uses = {f"c{i}": 1 for i in range(CALL_IDS_CARRIED)}
    kept = _continued(state)
    assert len(kept.calls.uses) == CALL_IDS_CARRIED and not kept.calls.ids_dropped

    kept.calls.uses["one more"] = 1
    dropped = _continued(kept)
    assert dropped.calls.uses == {} and dropped.calls.ids_dropped
    # Once dropped, every later run starts empty, however few ids it used.
    dropped.calls.uses = {"a": 1}
    later = _continued(dropped)
    assert later.calls.uses == {} and later.calls.ids_dropped


async def test_a_run_without_call_ids_keys_calls_by_its_run_and_wants_the_hash(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    keys: list[str] = []
    registry = ToolRegistry()

    @registry.tool(approval=True)
    def pay(amount: int, ctx: ToolContext) -> str:
        """Pay an amount."""
        keys.append(ctx.idempotency_key)
        return f"paid {amount}"

    earlier = [answer("(a turn of an earlier run)")] * 3  # the script is indexed by turn
    model = write_script(tmp_path, [*earlier, calls(("a", "pay", {"amount": 5})), answer("paid")])
    config = AgentConfig(model=model)
    # The state a continued run of a long chain starts from (the chain's third run).
    carried = CarriedState(
        conversation=[],
        turn=3,
        tool_calls=30,
        catalog=registry.specs(),
        continued=2,
        call_ids_dropped=True,
    )
    run_id = f"chain-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, registry, task_queue):
        handle = await client.start_workflow(
            AgentWorkflow.run,
            AgentInput(prompt="pay", config=config, carried=carried),
            id=run_id,
            task_queue=task_queue,
        )
        run = DurableTools(client, task_queue).run(run_id)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        # The earlier runs' "a" calls are forgotten: a decision must say which one it means.
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await run.decide("a", approve=True)
        assert "arguments hash" in str(refused.value.cause)
        [(_, pending)] = await run.pending_approvals()
        await run.decide("a", approve=True, arguments_hash=pending.arguments_hash)
        result = await run.result()
        await assert_not_wedged(handle)
    assert result.status == RunStatus.COMPLETED
    # No key of an earlier run (`<id>/a`, `<id>/a#n`) has this form.
    assert keys == [f"{run_id}@2/a"]
