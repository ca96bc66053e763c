"""The tool activity formats a small text result on the event loop, and anything that may
need the artifact store in a thread, where a store write cannot stall the worker.

Every other call used to pay a thread hop each way to format a one-line result (issue
#33): on a busy worker, scheduling that thread cost more than the formatting itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_tools import ToolRegistry
from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._tools import make_tool_activity
from durable_tools._activities._types import ToolInvocation
from durable_tools.tools import FileSystemArtifactStore, ToolOutcome

SECRET = "hunter42"


async def _call(
    tmp_path: Path, answer: str, *, limit: int, hops: list[str]
) -> tuple[ToolOutcome, FileSystemArtifactStore]:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def reply() -> str:
        """Answer with the text of the test."""
        return answer

    store = FileSystemArtifactStore(tmp_path / "artifacts")
    runtime = ToolRuntime(registry, artifact_store=store, secrets={"password": SECRET})
    run_tool = make_tool_activity(registry.get("reply"), runtime)
    invocation = ToolInvocation(
        call_id="c1",
        tool_name="reply",
        arguments={},
        workflow_id="run-1",
        idempotency_key="run-1/c1",
        output_limit_bytes=limit,
    )
    to_thread = asyncio.to_thread

    async def counted(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(fn, "__name__", repr(fn)))
        return await to_thread(fn, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(asyncio, "to_thread", counted)
        outcome = await ActivityEnvironment().run(run_tool, invocation)
    assert isinstance(outcome, ToolOutcome)
    return outcome, store


async def test_a_small_text_result_is_formatted_without_a_thread(tmp_path: Path) -> None:
    hops: list[str] = []
    outcome, _ = await _call(tmp_path, f"the password is {SECRET}", limit=16_000, hops=hops)
    assert outcome.content == "the password is [redacted]"  # scrubbed all the same
    assert hops == []


async def test_a_large_result_is_formatted_in_a_thread_and_kept_in_the_store(
    tmp_path: Path,
) -> None:
    hops: list[str] = []
    outcome, store = await _call(tmp_path, "x" * 20_000, limit=4_000, hops=hops)
    assert hops == ["format_result"]
    assert len(outcome.content.encode()) <= 4_000
    [ref] = outcome.artifacts
    assert store.get(ref) == b"x" * 20_000


async def test_a_result_that_scrubbing_makes_too_long_still_reaches_the_store(
    tmp_path: Path,
) -> None:
    # 3,600 characters fit the 4,000-byte limit; with each secret replaced by
    # "[redacted]" they do not any more, so the full (scrubbed) output must be stored.
    answer = SECRET * 450
    hops: list[str] = []
    outcome, store = await _call(tmp_path, answer, limit=4_000, hops=hops)
    assert hops == ["format_result"]  # tried on the loop, then done where the store is
    assert len(outcome.content.encode()) <= 4_000
    assert SECRET not in outcome.content
    [ref] = outcome.artifacts
    assert store.get(ref) == b"[redacted]" * 450
