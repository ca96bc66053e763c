"""The tool activity records its elapsed time to a tenth of a millisecond.

`ToolOutcome.elapsed_ms` is in the history of every call: a float with 17 significant
digits costs a dozen bytes a call for precision nobody reads (issue #15, history bytes).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.testing import ActivityEnvironment

from durable_tools import ToolRegistry
from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._tools import make_tool_activity
from durable_tools._activities._types import ToolInvocation
from durable_tools.tools import FileSystemArtifactStore, ToolOutcome


async def test_elapsed_time_is_kept_to_a_tenth_of_a_millisecond(tmp_path: Path) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def wait_a_bit(key: str) -> str:
        """Take a few milliseconds."""
        await asyncio.sleep(0.0123)
        return f"value of {key}"

    runtime = ToolRuntime(registry, artifact_store=FileSystemArtifactStore(tmp_path))
    run_tool = make_tool_activity(registry.get("wait_a_bit"), runtime)
    invocation = ToolInvocation(
        call_id="c1",
        tool_name="wait_a_bit",
        arguments={"key": "a"},
        workflow_id="run-1",
        idempotency_key="run-1/c1",
    )
    outcome = await ActivityEnvironment().run(run_tool, invocation)
    assert isinstance(outcome, ToolOutcome)
    assert outcome.content == "value of a"
    assert outcome.elapsed_ms >= 12
    assert outcome.elapsed_ms == round(outcome.elapsed_ms, 1)
    assert len(repr(outcome.elapsed_ms).split(".")[1]) == 1
