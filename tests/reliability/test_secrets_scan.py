"""A sentinel secret used by tools and quoted in their errors never leaves the worker:
not in the run's history, its queries, nor in any log line of the run."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import pytest
from temporalio.client import Client

from durable_tools.client import DurableTools
from durable_tools.tools import Injected, RetrySpec, ToolContext, ToolExecutionError, ToolRegistry
from durable_tools.workflows import RunStatus
from support import answer, calls, running_worker, write_script

SENTINEL = "sk-SCAN-SENTINEL-0c4f9a71"


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def call_api(path: str, api_key: Annotated[str, Injected("api_key", secret=True)]) -> str:
        """Call an API with the worker's key."""
        if path == "/reject":
            raise ToolExecutionError(f"upstream rejected key {api_key}", retryable=False)
        return f"GET {path} ok"

    @tools.tool(idempotent=True, retry=RetrySpec(initial_interval=0.05, maximum_attempts=3))
    def flaky_upload(name: str, ctx: ToolContext) -> str:
        """Upload; fails with a plain exception quoting the key on early attempts."""
        key = ctx.secret("api_key")
        if ctx.attempt < 3:
            raise ConnectionError(f"POST /upload?key={key} reset by peer")
        return f"uploaded {name}"

    @tools.tool(read_only=True, retry=RetrySpec(initial_interval=0.05, maximum_attempts=2))
    def always_broken(ctx: ToolContext) -> str:
        """Fails with an unclassified error quoting the key."""
        raise RuntimeError(f"config dump: api_key={ctx.secret('api_key')}")

    return tools


async def test_sentinel_never_in_history_queries_or_logs(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio")
    caplog.set_level(logging.DEBUG, logger="durable_tools")
    model = write_script(
        tmp_path,
        [
            calls(
                ("a1", "call_api", {"path": "/users"}),
                ("a2", "call_api", {"path": "/reject"}),
                ("u1", "flaky_upload", {"name": "report.csv"}),
                ("b1", "always_broken", {}),
            ),
            answer("done"),
        ],
    )
    async with running_worker(client, registry(), task_queue, secrets={"api_key": SENTINEL}):
        run = await DurableTools(client, task_queue).start("use the api", model=model)
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
        events = await run.events()
        snapshot = await run.status()
    assert result.status == RunStatus.COMPLETED
    by_id = {r.call_id: r for r in timeline}
    assert by_id["a1"].status == "completed"
    assert by_id["a2"].status == "failed" and "[redacted]" in (by_id["a2"].result or "")
    assert by_id["u1"].status == "completed" and by_id["u1"].attempts == 3
    assert by_id["b1"].status == "failed"

    history = (await run.handle.fetch_history()).to_json()
    assert "upstream rejected key" in history  # the error itself is there, scrubbed
    assert SENTINEL not in history
    for value in (conversation, timeline, events, [snapshot]):
        assert all(SENTINEL not in item.model_dump_json() for item in value)

    # Logs of the worker and the SDK at DEBUG, exception text included.
    assert any("Completing activity" in r.getMessage() for r in caplog.records)
    assert SENTINEL not in caplog.text
    for record in caplog.records:
        assert SENTINEL not in record.getMessage()
        assert SENTINEL not in str(record.__dict__)
