"""An answer to an MCP server's question holding NaN or an infinity is refused, naming
where it stands, before it enters history: the question keeps waiting, and the run goes
on with a good answer (the elicitation server of `test_mcp_elicit.py`, on the dev server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.common import RawValue
from test_mcp_elicit import pool, registry_for, start, tool_reply, waiting  # noqa: F401

from cli_support import cli, cli_env  # noqa: F401  (a fixture)
from durable_tools import InputAnswerRejected, RunStatus, answer_input
from durable_tools.sources import McpPool
from support import assert_not_wedged, running_worker, wait_for

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("content", "where"),
    [
        # `score` is not in the server's schema, which allows other keys: only the
        # finiteness check stands between it and the server.
        ({"name": "Ada", "score": NAN}, "$.content.score (NaN)"),
        ({"name": "Ada", "times": INF}, "$.content.times (Infinity)"),
        ({"name": "Ada", "seen": [1.0, [-INF]]}, "$.content.seen[1][0] (-Infinity)"),
    ],
)
async def test_an_answer_with_nan_or_infinity_is_refused_and_the_question_waits(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    pool: McpPool,  # noqa: F811  (the fixture imported above)
    content: Any,
    where: str,
) -> None:
    async with running_worker(client, await registry_for(pool), task_queue):
        run = await start(client, task_queue, tmp_path)
        await wait_for(run, waiting, timeout=30)
        with pytest.raises(InputAnswerRejected) as refused:
            await answer_input(run, "g1", "accept", content)
        assert f"a number JSON cannot hold at {where}" in str(refused.value)
        # Written as JSON text by another client: `1e999` is no float there.
        args = ['"g1"', '"accept"', '{"name": "Ada", "times": 1e999}']
        payloads = [
            RawValue(Payload(metadata={"encoding": b"json/plain"}, data=arg.encode()))
            for arg in args
        ]
        with pytest.raises(WorkflowUpdateFailedError) as raw_refused:
            await run.handle.execute_update("answer_input", args=payloads, result_type=str)
        assert "$.content.times (Infinity)" in str(raw_refused.value.cause)

        assert (await run.status()).pending_inputs  # still waiting, nothing recorded
        await answer_input(run, "g1", "accept", {"name": "Bo"})
        assert (await run.result()).status == RunStatus.COMPLETED
        assert await tool_reply(run) == "hello Bo!"
        await assert_not_wedged(run.handle, allowed=0)
        history = await run.handle.fetch_history()
        accepted = [
            e
            for e in history.events
            if e.HasField("workflow_execution_update_accepted_event_attributes")
        ]
        assert len(accepted) == 1


async def test_the_cli_answer_with_nan_is_refused_naming_the_field(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    pool: McpPool,  # noqa: F811  (the fixture imported above)
    cli_env: str,  # noqa: F811
    capsys: Any,
) -> None:
    async with running_worker(client, await registry_for(pool), task_queue):
        run = await start(client, task_queue, tmp_path)
        await wait_for(run, waiting, timeout=30)
        # Python's json module, which the CLI reads --accept with, takes NaN.
        answer = '{"name": "Di", "score": NaN}'
        code, _, err = await cli(capsys, "answer", run.run_id, "g1", "--accept", answer)
        assert code != 0 and "$.content.score (NaN)" in err, err
        code, _, err = await cli(capsys, "answer", run.run_id, "g1", "--accept", '{"name": "Di"}')
        assert code == 0, err
        assert (await run.result()).status == RunStatus.COMPLETED
        assert await tool_reply(run) == "hello Di!"
        await assert_not_wedged(run.handle, allowed=0)
