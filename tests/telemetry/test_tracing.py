"""A real run, traced: run -> turn -> model / tool spans with durable-tools' attributes."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from telemetry_support import telemetry_client, telemetry_registry
from temporalio.testing import WorkflowEnvironment

from durable_tools import AgentConfig, DurableTools, RunStatus
from durable_tools.telemetry import (
    AGENT,
    ATTEMPT,
    CALL_ID,
    ERROR_KIND,
    INPUT_TOKENS,
    OUTCOME,
    OUTPUT_TOKENS,
    RUN_ID,
    TOOL,
    TURN,
)
from support import answer, assert_not_wedged, calls, running_worker, write_script


def _by_name(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "replaying"])
async def test_a_run_is_traced_as_run_turn_model_and_tool_spans(
    env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    spans: InMemorySpanExporter,
    cached: bool,
) -> None:
    """Without a workflow cache every workflow task replays the run from history: each span
    must still be exported once, and the spans opened during a replay keep their ids."""
    client = await telemetry_client(env)
    steps = [
        {
            **calls(("c1", "add", {"a": 2, "b": 3})),
            "usage": {"input_tokens": 11, "output_tokens": 7},
        },
        calls(("c2", "flaky", {"text": "hi"})),
        answer("5, hi"),
    ]
    config = AgentConfig(name="summer", model=write_script(tmp_path, steps))
    tracer = trace.get_tracer("test")
    options = {} if cached else {"max_cached_workflows": 0}
    async with running_worker(client, telemetry_registry(), task_queue, **options):
        with tracer.start_as_current_span("caller") as caller:
            run = await DurableTools(client, task_queue).start("sum things", config=config)
        result = await run.result()
    assert result.status == RunStatus.COMPLETED
    await assert_not_wedged(run.handle)

    mine = [s for s in spans.get_finished_spans() if s.attributes.get(RUN_ID) == run.run_id]
    (root,) = _by_name(mine, "durable_tools.run")
    turns = sorted(_by_name(mine, "durable_tools.turn"), key=lambda s: s.attributes[TURN])
    models = sorted(_by_name(mine, "durable_tools.model"), key=lambda s: s.attributes[TURN])
    tools = _by_name(mine, "durable_tools.tool")

    # The caller's trace reaches the worker: one trace, the run under the caller's span.
    assert root.context.trace_id == caller.get_span_context().trace_id
    assert root.parent is not None and root.parent.span_id == caller.get_span_context().span_id
    assert root.attributes[AGENT] == "summer"

    # run -> turn (one per model call) -> model / tool
    assert [t.attributes[TURN] for t in turns] == [1, 2, 3]
    assert all(t.parent is not None and t.parent.span_id == root.context.span_id for t in turns)
    turn_ids = {t.attributes[TURN]: t.context.span_id for t in turns}
    assert [m.attributes[TURN] for m in models] == [1, 2, 3]
    for model in models:
        assert model.parent is not None and model.parent.span_id == turn_ids[model.attributes[TURN]]
        assert model.attributes[AGENT] == "summer"
        assert model.attributes[OUTCOME] == "ok"
    assert (models[0].attributes[INPUT_TOKENS], models[0].attributes[OUTPUT_TOKENS]) == (11, 7)

    by_call = sorted(
        ((t.attributes[CALL_ID], t.attributes[ATTEMPT], t) for t in tools), key=lambda x: x[:2]
    )
    assert [(c, a) for c, a, _ in by_call] == [("c1", 1), ("c2", 1), ("c2", 2)]
    (_, _, add), (_, _, failed), (_, _, retried) = by_call
    assert add.parent is not None and add.parent.span_id == turn_ids[1]
    assert failed.parent is not None and failed.parent.span_id == turn_ids[2]
    assert retried.parent is not None and retried.parent.span_id == turn_ids[2]
    assert (add.attributes[TOOL], add.attributes[OUTCOME], add.attributes[AGENT]) == (
        "add",
        "ok",
        "summer",
    )
    assert ERROR_KIND not in add.attributes
    assert (failed.attributes[OUTCOME], failed.attributes[ERROR_KIND]) == (
        "error",
        "ToolExecutionError",
    )
    assert not failed.status.is_ok
    assert retried.attributes[OUTCOME] == "ok"
