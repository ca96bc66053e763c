"""NaN and infinities never reach the model: a callback answer holding one is refused
(naming where it stands) before it enters history, and the run goes on; a tool result
holding one reaches the model as JSON (the number named as a string)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.common import RawValue
from test_callback_tools import callback_registry, locate_script, published, tool_message

from durable_tools import AgentRun, DurableTools, RunStatus, ToolRegistry
from durable_tools.callbacks import (
    CALLBACK_INVALID,
    CallbackRejected,
    answer_callback,
    serve_callbacks,
)
from support import answer, assert_not_wedged, calls, running_worker, write_script

NAN, INF = float("nan"), float("inf")


def strict_json(text: str) -> Any:
    """`text` parsed as JSON proper: `NaN`, `Infinity` and `-Infinity` are refused."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in what the model reads: {text[:200]}")

    return json.loads(text, parse_constant=refuse)


def raw_json(text: str) -> RawValue:
    """An update argument sent as these exact JSON bytes (`1e999` is no float here)."""
    return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=text.encode()))


async def accepted_updates(run: AgentRun) -> int:
    history = await run.handle.fetch_history()
    return sum(
        1
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    )


async def test_a_callback_answer_with_nan_or_infinity_is_refused_naming_the_field(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        pending = await published(run)
        ids = f'"call_id": "c1", "request_hash": "{pending.request_hash}"'
        hostile: list[tuple[Any, str]] = [
            ({"lat": NAN, "lon": 2.0}, "$.output.lat (NaN)"),
            ({"lat": 1.0, "lon": INF}, "$.output.lon (Infinity)"),
            (
                {"lat": 1.0, "lon": 2.0, "seen": [[0.5], [1.0, -INF]]},
                "$.output.seen[1][1] (-Infinity)",
            ),
            (
                {"lat": 1.0, "lon": 2.0, "deep": {"x y": [{"z": NAN}]}},
                '$.output.deep["x y"][0].z (NaN)',
            ),
        ]
        for output, where in hostile:
            with pytest.raises(CallbackRejected) as rejected:
                await answer_callback(run.handle, pending, output=output)
            assert rejected.value.kind == CALLBACK_INVALID
            assert f"a number JSON cannot hold at {where}" in rejected.value.message
        # Written as the JSON text a client in another language may send.
        for body, where in [
            (f'{{{ids}, "output": {{"lat": 1e999, "lon": 2}}}}', "$.output.lat (Infinity)"),
            (f'{{{ids}, "output": {{"lat": 1, "lon": -1E400}}}}', "$.output.lon (-Infinity)"),
            (f'{{{ids}, "output": {{"lat": -Infinity, "lon": NaN}}}}', "$.output.lat (-Infinity)"),
        ]:
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await run.handle.execute_update("callback_result", raw_json(body), result_type=str)
            assert where in str(refused.value.cause), str(refused.value.cause)
        # Nothing entered history; the call still waits, and a good answer ends it.
        assert await accepted_updates(run) == 0
        assert await answer_callback(run.handle, pending, output={"lat": 1.5, "lon": 2.0}) == (
            "accepted"
        )
        assert (await run.result()).status == RunStatus.COMPLETED
        assert strict_json((await tool_message(run, "c1")).content) == {"lat": 1.5, "lon": 2.0}
        await assert_not_wedged(run.handle, allowed=0)


async def test_a_handler_returning_nan_becomes_an_error_the_model_reads(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    said: list[str] = []
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        await asyncio.wait_for(
            serve_callbacks(
                run.handle,
                {"get_location": lambda precise: {"lat": math.nan, "lon": 2.0}},
                on_answer=lambda pending, outcome: said.append(outcome),
            ),
            30,
        )
        message = await tool_message(run, "c1")
        assert message.is_error and "$.output.lat (NaN)" in message.content
        assert said == [f"refused: {said[0].removeprefix('refused: ')}"]
        conversation = await run.conversation()
        for item in conversation:
            assert "NaN" not in (item.content or "").replace("(NaN)", "")
        await assert_not_wedged(run.handle, allowed=0)


async def test_a_tool_result_with_nan_reaches_the_model_as_json(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def stats() -> dict[str, Any]:
        """Statistics of an empty sample."""
        return {"mean": math.nan, "max": -math.inf, "ratios": [1.5, [math.inf]], "n": 0}

    model = write_script(tmp_path, [calls(("s1", "stats", {})), answer("done")])
    async with running_worker(client, tools, task_queue):
        run = await DurableTools(client, task_queue).start("stats", model=model)
        assert (await run.result()).status == RunStatus.COMPLETED
        message = await tool_message(run, "s1")
        [record] = await run.timeline()
    expected = {"mean": "NaN", "max": "-Infinity", "ratios": [1.5, ["Infinity"]], "n": 0}
    assert strict_json(message.content) == expected
    assert strict_json(record.result or "") == expected
