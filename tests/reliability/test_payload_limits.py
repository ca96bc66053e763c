"""A tool returning 5 MB: past Temporal's 2 MB payload limit, the run still completes."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from temporalio.client import Client

from durable_tools import AgentConfig, ArtifactRef, DurableTools, RunStatus, ToolRegistry
from durable_tools.tools import FileSystemArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, write_script

SIZE = 5 * 1024 * 1024
LIMIT = 16_000


def big_text() -> str:
    line = "".join(chr(ord("a") + i % 26) for i in range(63)) + "\n"
    return (line * (SIZE // len(line) + 1))[:SIZE]


async def test_five_megabyte_output_goes_to_the_artifact_store(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def export_table(name: str) -> str:
        """Dump a whole table as text."""
        return big_text()

    store = FileSystemArtifactStore(tmp_path / "artifacts")
    config = AgentConfig(
        model=write_script(
            tmp_path, [calls(("x1", "export_table", {"name": "orders"})), answer("exported")]
        ),
        output_limit_bytes=LIMIT,
    )
    async with running_worker(client, registry, task_queue, artifact_store=store):
        run = await DurableTools(client, task_queue).start("export", config=config)
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "exported"
    assert timeline[0].status == "completed"

    # The model saw a bounded summary that names the artifact.
    reply = next(m.content or "" for m in conversation if m.tool_call_id == "x1")
    assert len(reply.encode()) <= LIMIT
    assert reply.startswith(big_text()[:1000])
    assert f"of {SIZE} bytes" in reply
    uri = re.search(r"artifact (file://\S+)", reply)
    digest = re.search(r"sha256 ([0-9a-f]{64})", reply)
    assert uri and digest

    # The store holds the whole output, byte for byte.
    expected = big_text().encode()
    assert digest.group(1) == hashlib.sha256(expected).hexdigest()
    ref = ArtifactRef(uri=uri.group(1), size=SIZE, sha256=digest.group(1))
    assert store.get(ref) == expected

    # No payload of the history comes near the output's size.
    history = await run.handle.fetch_history()
    largest = max(event.ByteSize() for event in history.events)
    assert largest < 4 * LIMIT, largest
    assert len(history.to_json()) < 20 * LIMIT
