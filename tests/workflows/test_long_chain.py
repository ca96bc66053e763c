"""A long chain of continued runs: each run's history stays the same size, nothing lost.

Continue-as-new records the carried state twice (the ending run's continued-as-new event,
the next run's started event); whatever it carries that grows with the chain's age makes
every later run's history larger than the one before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, Limits, Message, RunStatus, ToolRegistry
from durable_tools._activities._conversation import SnapshotMissing, whole_conversation
from durable_tools.tools import FileSystemArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, write_script

TURNS = 40
PER_TURN = 10
AFTER_EVENTS = 100
"""A few turns a run, each run adding more timeline entries and events than CARRY_FLOOR
(so each carries its own, and the size of a run does not depend on the floor)."""


@pytest.mark.slow
async def test_each_continued_run_keeps_the_same_history_size(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True, local=True)  # local: a quick test of many calls
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key} " + "x" * 200

    ids = [f"c{i}" for i in range(TURNS * PER_TURN)]
    steps = [
        calls(*((i, "lookup", {"key": i}) for i in ids[t : t + PER_TURN]))
        for t in range(0, len(ids), PER_TURN)
    ]
    config = AgentConfig(
        model=write_script(tmp_path, [*steps, answer("looked up")]),
        limits=Limits(max_turns=TURNS + 2, max_tool_calls=len(ids)),
        continue_as_new_after_events=AFTER_EVENTS,
    )
    store = FileSystemArtifactStore(tmp_path / "artifacts")
    async with running_worker(client, registry, task_queue, artifact_store=store):
        run = await DurableTools(client, task_queue).start("look up", config=config)
        result = await run.result()
        status = await run.status()
        conversation = await run.conversation()
        timeline = await run.timeline()
        page = await run.events_since(0)
        sizes: list[int] = []
        executions = [e async for e in client.list_workflows(f"WorkflowId = '{run.run_id}'")]
        for execution in sorted(executions, key=lambda e: e.start_time):
            handle = client.get_workflow_handle(run.run_id, run_id=execution.run_id)
            await assert_not_wedged(handle)
            history = await handle.fetch_history()
            sizes.append(sum(event.ByteSize() for event in history.events))

    assert result.status == RunStatus.COMPLETED and result.tool_calls == len(ids)
    assert len(sizes) >= 6 and status.continued == len(sizes) - 1
    # The bound: every continued run (the last included) is about the size of the first
    # continued one, though it carries a chain five or ten times older.
    assert max(sizes[1:]) <= 1.5 * sizes[1], sizes
    # Nothing lost: the whole conversation, read through the snapshot the run carries.
    assert status.conversation_offset > 0
    assert [m.role for m in conversation[:2]] == ["user", "assistant"]
    assert conversation[0].content == "look up"
    replies = [m.tool_call_id for m in conversation if m.role == "tool"]
    assert replies == ids
    assert conversation[-1].content == "looked up"
    # The timeline and events go on from the runs before: the last calls are there, and
    # event numbers continue the chain's count.
    assert [r.call_id for r in timeline] == ids[-len(timeline) :]
    assert len(timeline) > PER_TURN
    seqs = [e.seq for e in page.events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert page.total == seqs[-1] + 1 and page.missed == seqs[0]
    assert page.events[-1].event == "run.completed"


async def test_a_conversation_whose_snapshot_is_gone_says_so(tmp_path: Path) -> None:
    """A client that cannot reach the run's store is told, not given half a conversation."""
    written = FileSystemArtifactStore(tmp_path / "worker")
    ref = written.put(b'{"prev":null,"length":2,"messages":[]}', "application/json")
    elsewhere = FileSystemArtifactStore(tmp_path / "client")
    tail = [Message.user("next")]
    with pytest.raises(SnapshotMissing):
        await whole_conversation(ref, 2, 2, tail, elsewhere)
    with pytest.raises(SnapshotMissing, match="no snapshot holds the earlier ones"):
        await whole_conversation(None, 0, 2, tail, elsewhere)
    assert await whole_conversation(None, 0, 0, tail) == tail
