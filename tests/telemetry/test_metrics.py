"""A real run, scraped: durable-tools' metrics and the SDK's on the worker's endpoint."""

from __future__ import annotations

from pathlib import Path

from prometheus_text import scrape, value
from telemetry_support import telemetry_client, telemetry_registry
from temporalio.testing import WorkflowEnvironment

from durable_tools import DurableTools, RunStatus
from durable_tools.telemetry import prometheus_runtime
from support import (
    answer,
    assert_not_wedged,
    calls,
    free_port,
    running_worker,
    wait_for,
    write_script,
)


async def test_a_run_is_counted_on_the_workers_prometheus_endpoint(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    port = free_port()
    client = await telemetry_client(env, tracing=False, runtime=prometheus_runtime(port))
    model = write_script(
        tmp_path,
        [
            {
                **calls(("c1", "add", {"a": 2, "b": 3})),
                "usage": {"input_tokens": 11, "output_tokens": 7},
            },
            calls(("c2", "flaky", {"text": "hi"})),
            calls(("c3", "pay", {"amount_cents": 500})),
            answer("done"),
        ],
    )
    # No workflow cache: every workflow task replays the run from history, and the
    # workflow-side counts must still be made once.
    async with running_worker(
        client, telemetry_registry(with_pay=True), task_queue, max_cached_workflows=0
    ):
        run = await DurableTools(client, task_queue).start("sum, echo and pay", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await run.approve("c3", decider="alice")
        assert (await run.result()).status == RunStatus.COMPLETED
        samples = await scrape(port)
    await assert_not_wedged(run.handle)

    # durable-tools' own, with the SDK's labels (task queue, activity type) added
    assert value(samples, "durable_tools_tool_calls", tool="add", outcome="ok") == 1
    assert value(samples, "durable_tools_tool_calls", tool="flaky", outcome="error") == 1
    assert value(samples, "durable_tools_tool_calls", tool="flaky", outcome="ok") == 1
    assert value(samples, "durable_tools_tool_calls", tool="pay", task_queue=task_queue) == 1
    assert value(samples, "durable_tools_tool_retries", tool="flaky") == 1
    assert value(samples, "durable_tools_tool_retries", tool="add") == 0
    assert value(samples, "durable_tools_tool_call_duration_count", tool="add") == 1
    assert value(samples, "durable_tools_tool_call_duration_bucket", tool="add", le="+Inf") == 1
    assert value(samples, "durable_tools_model_calls", model="scripted", outcome="ok") == 4
    assert value(samples, "durable_tools_model_tokens", model="scripted", direction="input") == 11
    assert value(samples, "durable_tools_model_tokens", model="scripted", direction="output") == 7
    # from the workflow, once each although every workflow task replayed the run
    assert value(samples, "durable_tools_approvals_requested", tool="pay") == 1
    decided = {"tool": "pay", "outcome": "approved", "decided_by": "person"}
    assert value(samples, "durable_tools_approvals_decided", **decided) == 1
    assert value(samples, "durable_tools_approval_wait_count", **decided) == 1
    # the SDK's runtime metrics on the same endpoint
    names = {name for name, _, _ in samples}
    assert {
        "temporal_workflow_completed",
        "temporal_activity_execution_latency_count",
        "temporal_worker_task_slots_available",
    } <= names
