"""Issue #15's history target on its 10-turn workload, and the status upserts it saved.

A run started by `DurableTools.start` records the bare hand-written loop's events plus the
catalog (one local-activity marker) and one status upsert (completed), in fewer bytes than
the bare loop measured in the same test. Runs started any other way still get every
status attribute written.
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from durable_tools import (
    AgentConfig,
    DurableTools,
    RunStatus,
    ToolRegistry,
    search_attributes as sa,
)
from durable_tools.workflows import AgentInput
from support import answer, assert_not_wedged, calls, running_worker, write_script

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo's bench/
from bench._common import Bench, tool_steps

CALLS = 10
BYTES_BOUND = 36_000
"""The bare loop's history on this workload in issue #15 (36.0-36.2 KB, its message types
written in full). Bytes depend on path lengths (the script path is in every model request,
artifact URIs in every model call), so the run below uses a short temporary directory as
the bench does; before wire types were trimmed this run recorded about 43 KB."""


def _kinds(history: WorkflowHistory) -> collections.Counter[str]:
    return collections.Counter(
        EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events
    )


def _status_upserts(history: WorkflowHistory) -> list[dict[str, bytes]]:
    """The run's own search-attribute upserts (not the SDK's `TemporalChangeVersion`)."""
    found = []
    for e in history.events:
        if e.event_type != EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            continue
        fields = e.upsert_workflow_search_attributes_event_attributes.search_attributes
        if set(fields.indexed_fields) != {"TemporalChangeVersion"}:
            found.append({k: v.data for k, v in fields.indexed_fields.items()})
    return found


async def test_ten_turns_record_the_bare_loop_plus_the_catalog_and_one_upsert(
    client: Client,
) -> None:
    with tempfile.TemporaryDirectory(prefix="dt-") as tmp:
        bench = Bench(client, Path(tmp))
        async with bench.workers():
            script = bench.script(tool_steps(CALLS))
            bare = await (await bench.run_bare(script, CALLS)).fetch_history()
            handle = await bench.run_durable(script, CALLS)
            durable = await handle.fetch_history()
            await assert_not_wedged(handle)
    # Exactly: the catalog as one local-activity marker, the final status upsert; no patch
    # marker, no TemporalChangeVersion upsert, no "running" upsert, no catalog round trip.
    assert _kinds(durable) - _kinds(bare) == collections.Counter(
        {"MARKER_RECORDED": 1, "UPSERT_WORKFLOW_SEARCH_ATTRIBUTES": 1}
    )
    assert _kinds(bare) - _kinds(durable) == collections.Counter()
    assert len(durable.events) == len(bare.events) + 2
    [final] = _status_upserts(durable)
    assert final[sa.AGENT_STATUS.name] == b'"completed"'
    size = sum(e.ByteSize() for e in durable.events)
    print(f"history bytes: durable-tools {size:,}, bare loop {bare_size(bare):,}")
    assert size <= BYTES_BOUND, f"{size:,} bytes (bare loop: {bare_size(bare):,})"
    # Issue #15's target: no more bytes than the hand-written loop on the same work (here
    # about 33.4 against 33.7 KB; the lengths that vary between runs, elapsed times and
    # timestamps, move either figure by tens of bytes, not hundreds).
    assert size <= bare_size(bare), f"{size:,} bytes, bare loop {bare_size(bare):,}"


def bare_size(history: WorkflowHistory) -> int:
    return sum(e.ByteSize() for e in history.events)


def _registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    return registry


STATUS = {
    sa.AGENT_STATUS.name: b'"running"',
    sa.AGENT_NAME.name: b'"agent"',
    sa.PENDING_APPROVALS.name: b"0",
    sa.AWAITING_TOOL.name: b'""',
}
FULL = TypedSearchAttributes(
    [
        SearchAttributePair(sa.AGENT_NAME, "agent"),
        SearchAttributePair(sa.AGENT_STATUS, "running"),
        SearchAttributePair(sa.PENDING_APPROVALS, 0),
        SearchAttributePair(sa.AWAITING_TOOL, ""),
    ]
)


@pytest.mark.parametrize(
    ("revision", "attributes"),
    [
        (0, None),  # `temporal workflow start`, or a client from before
        (1, None),  # a current input without the attributes: nothing is assumed
        (0, FULL),  # the attributes without the revision: as continued runs start
        (1, TypedSearchAttributes([SearchAttributePair(sa.AGENT_STATUS, "running")])),
    ],
    ids=["plain", "revision-only", "attributes-only", "partial-attributes"],
)
async def test_runs_started_otherwise_still_upsert_their_status(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    revision: int,
    attributes: TypedSearchAttributes | None,
) -> None:
    model = write_script(tmp_path, [calls(("c1", "lookup", {"key": "a"})), answer("done")])
    async with running_worker(client, _registry(), task_queue):
        handle = await client.start_workflow(
            "AgentWorkflow",
            AgentInput(prompt="go", config=AgentConfig(model=model), revision=revision),
            id=f"plain-{task_queue}",
            task_queue=task_queue,
            search_attributes=attributes or TypedSearchAttributes.empty,
        )
        result = await handle.result()
        await assert_not_wedged(handle)
    assert result["status"] == RunStatus.COMPLETED.value
    upserts = _status_upserts(await handle.fetch_history())
    assert [u[sa.AGENT_STATUS.name] for u in upserts] == [b'"running"', b'"completed"']
    assert {k: v for k, v in upserts[0].items() if k in STATUS} == STATUS
    found = (await handle.describe()).typed_search_attributes
    assert found.get(sa.AGENT_STATUS) == "completed"
    assert found.get(sa.PENDING_APPROVALS) == 0


async def test_a_run_started_by_the_client_holds_its_status_from_the_start(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [calls(("c1", "lookup", {"key": "a"})), answer("done")])
    async with running_worker(client, _registry(), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        described = (await run.handle.describe()).typed_search_attributes
        result = await run.result()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    # Every attribute `publish` writes is there before the first workflow task runs.
    assert described.get(sa.AGENT_STATUS) in ("running", "completed")
    assert described.get(sa.AGENT_NAME) == "agent"
    assert described.get(sa.PENDING_APPROVALS) == 0
    history = await run.handle.fetch_history()
    assert [u[sa.AGENT_STATUS.name] for u in _status_upserts(history)] == [b'"completed"']
    markers = [
        e.marker_recorded_event_attributes.marker_name
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
    ]
    assert markers == ["core_local_activity"]  # the catalog; no patch marker
