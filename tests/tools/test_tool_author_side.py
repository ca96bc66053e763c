"""What a tool author gets: errors that say which tool and call failed and what kind of
failure it was, and the run's trace id in the tool's context."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_tools import (
    Cancelled,
    Denied,
    DurableTools,
    InvalidArguments,
    NeedsAuthorization,
    RunStatus,
    ToolContext,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
    ToolRegistry,
    ToolTimeout,
)
from durable_tools.telemetry import RUN_ID, TelemetryPlugin
from durable_tools.tools._context import MAX_TOOL_EVENTS
from durable_tools.workspace import register_workspace_tools
from otel_support import in_memory_spans
from support import answer, calls, running_worker, write_script


@pytest.mark.parametrize(
    ("error", "user", "retryable"),
    [
        (InvalidArguments("amount must be positive"), True, False),
        (ToolNotFound("no such tool"), True, False),
        (Denied("not allowed"), True, False),
        (NeedsAuthorization("grant needed"), True, False),
        (ToolExecutionError("upstream 503", retryable=True), False, True),
        (ToolTimeout("took too long", retryable=True), False, True),
        (Cancelled("stopped"), False, False),
        # The author knows better than the kind: an order id that does not exist.
        (ToolExecutionError("no order A-17", user_error=True), True, False),
        (Denied("the upstream refused our key", user_error=False), False, False),
    ],
)
def test_an_error_says_whether_retrying_or_the_caller_can_fix_it(
    error: ToolError, user: bool, retryable: bool
) -> None:
    assert (error.is_user_error(), error.is_retryable()) == (user, retryable)
    assert (error.tool_name, error.call_id) == (None, None)  # nothing ran it yet


def registry(root: Path) -> ToolRegistry:
    tools = ToolRegistry()
    register_workspace_tools(tools, root)

    @tools.tool
    def charge(amount: int) -> str:
        """Charge an amount."""
        if amount > 100:
            raise ToolExecutionError("over the limit", user_error=True)
        raise KeyError("ledger")  # a bug in the tool: classified, not the caller's

    @tools.tool
    def named(amount: int) -> str:
        """Raise an error the tool names itself."""
        error = ToolExecutionError("from the ledger")
        error.tool_name, error.call_id = "ledger_lookup", "inner-1"
        raise error

    return tools


async def failure(tools: ToolRegistry, name: str, arguments: object) -> ToolError:
    context = ToolContext(tool_call_id="call-7", tool_name=name)
    with pytest.raises(ToolError) as caught:
        await tools.invoke(name, arguments, context)  # type: ignore[arg-type]
    return caught.value


async def test_the_runtime_names_the_tool_and_the_call_of_every_error(tmp_path: Path) -> None:
    tools = registry(tmp_path)
    raised = await failure(tools, "charge", {"amount": 500})
    assert (raised.tool_name, raised.call_id, raised.is_user_error()) == ("charge", "call-7", True)
    bug = await failure(tools, "charge", {"amount": 5})
    assert (bug.tool_name, bug.call_id, bug.is_user_error()) == ("charge", "call-7", False)
    invalid = await failure(tools, "charge", {"amount": "five"})
    assert isinstance(invalid, InvalidArguments) and invalid.is_user_error()
    assert (invalid.tool_name, invalid.call_id) == ("charge", "call-7")
    escape = await failure(tools, "read_file", {"path": "../etc/passwd"})
    assert (escape.tool_name, escape.is_user_error(), escape.is_retryable()) == (
        "read_file",
        True,
        False,
    )
    kept = await failure(tools, "named", {"amount": 1})
    assert (kept.tool_name, kept.call_id) == ("ledger_lookup", "inner-1")  # the tool's word


def test_a_context_outside_any_span_has_no_trace_id() -> None:
    assert ToolContext(tool_call_id="c", tool_name="t").trace_id is None
    tracer = TracerProvider().get_tracer("test")  # a real span, whatever the global provider
    with tracer.start_as_current_span("outer") as span:
        inside = ToolContext(tool_call_id="c", tool_name="t").trace_id
    assert inside == trace.format_trace_id(span.get_span_context().trace_id)
    assert inside is not None and len(inside) == 32 and inside != "0" * 32


def trace_registry(seen: list[str | None]) -> ToolRegistry:
    """`where()`, which notes the trace id its context gives (a regular activity: the
    worker's tracing interceptor opens its span)."""
    tools = ToolRegistry()

    @tools.tool(read_only=True, local=False)
    def where(ctx: ToolContext) -> str:
        """Say which trace this call is in."""
        seen.append(ctx.trace_id)
        return "ok"

    return tools


async def test_a_tool_reads_its_runs_trace_id(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    spans = in_memory_spans()
    client = await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=pydantic_data_converter,
        plugins=[TelemetryPlugin(tracing=True)],
    )
    seen: list[str | None] = []
    tools = trace_registry(seen)
    model = write_script(tmp_path, [calls(("w1", "where", {})), answer("done")])
    async with running_worker(client, tools, task_queue):
        with trace.get_tracer("test").start_as_current_span("caller") as caller:
            run = await DurableTools(client, task_queue).start("where?", model=model)
        result = await run.result()
    assert result.status == RunStatus.COMPLETED
    (root,) = [
        s
        for s in spans.get_finished_spans()
        if s.name == "durable_tools.run" and s.attributes.get(RUN_ID) == run.run_id
    ]
    expected = trace.format_trace_id(caller.get_span_context().trace_id)
    assert seen == [expected] and root.context.trace_id == caller.get_span_context().trace_id


async def test_without_tracing_the_trace_id_is_none(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    seen: list[str | None] = []
    tools = trace_registry(seen)
    model = write_script(tmp_path, [calls(("w1", "where", {})), answer("done")])
    async with running_worker(client, tools, task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=model)
        assert (await run.result()).status == RunStatus.COMPLETED
    assert seen == [None]


def test_emit_keeps_a_bounded_copy_and_refuses_what_is_not_json() -> None:
    context = ToolContext(tool_call_id="c", tool_name="t")
    data = {"rows": 3}
    assert context.emit("  imported\n 3 rows ", data)
    data["rows"] = 99  # the entry was copied when it was written
    with pytest.raises(ValueError, match="plain JSON"):
        context.emit("bad", {"x": float("nan")})
    with pytest.raises(ValueError, match="plain JSON"):
        context.emit("bad", object())
    with pytest.raises(ValueError, match="over 1000 bytes"):
        context.emit("big", "x" * 1_001)
    assert all(context.emit(f"n{n}") for n in range(MAX_TOOL_EVENTS - 1))
    assert not context.emit("one too many")  # dropped, and the tool is told
    notes = context.emitted
    assert len(notes) == MAX_TOOL_EVENTS
    assert (notes[0].detail, notes[0].data) == ("imported 3 rows", {"rows": 3})
    assert len(ToolContext(tool_call_id="c", tool_name="t").emitted) == 0
    long = ToolContext(tool_call_id="c", tool_name="t")
    long.emit("y" * 10_000)
    assert len(long.emitted[0].detail) <= 500


async def test_a_tools_own_events_reach_the_runs_audit_stream_scrubbed(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tools = ToolRegistry()

    @tools.tool(idempotent=True)
    def import_rows(ctx: ToolContext, table: str) -> str:
        """Import rows into a table."""
        key = ctx.secret("db_password")
        ctx.emit(f"connected to {table} with {key}", {"password": key, "table": table})
        ctx.emit("imported", {"rows": 3})
        return "3 rows"

    model = write_script(
        tmp_path, [calls(("i1", "import_rows", {"table": "orders"})), answer("done")]
    )
    async with running_worker(client, tools, task_queue, secrets={"db_password": "hunter2-SECRET"}):
        run = await DurableTools(client, task_queue).start("import", model=model)
        assert (await run.result()).status == RunStatus.COMPLETED
        events = await run.events()
        history = await run.handle.fetch_history()
    names = [(e.event, e.call_id) for e in events if e.call_id == "i1"]
    assert names[-3:] == [("tool.event", "i1"), ("tool.event", "i1"), ("tool.completed", "i1")]
    first, second = (e for e in events if e.event == "tool.event")
    assert first.tool == "import_rows" and "hunter2-SECRET" not in (first.detail or "")
    assert first.detail == "connected to orders with [redacted]"
    assert first.details == {"password": "[redacted]", "table": "orders"}
    assert second.details == {"rows": 3}
    # Payloads are base64 in the JSON form of a history: decode them before searching.
    raw = history.to_json()
    payloads = [base64.b64decode(b) for b in re.findall(r'"data":\s*"([A-Za-z0-9+/=]+)"', raw)]
    assert any(b"connected to orders with [redacted]" in p for p in payloads)  # the search sees
    assert not any(b"hunter2-SECRET" in p for p in payloads) and "hunter2-SECRET" not in raw
