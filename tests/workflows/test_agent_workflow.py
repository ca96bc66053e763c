"""The agent loop on a real Temporal dev server, with scripted models and real tool activities."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    DurableTools,
    ExecutionStrategy,
    Injected,
    Limits,
    RetrySpec,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
)
from durable_tools.search_attributes import AGENT_STATUS
from support import answer, calls, running_worker, scheduled_activities, write_script


def make_registry(log: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather for a city.

        Args:
            city: City name.
        """
        log.append(("get_weather", city))
        return {"city": city, "temperature_c": 21}

    @registry.tool(read_only=True)
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        log.append(("add", a, b))
        return a + b

    return registry


async def test_scripted_run_with_several_tools(client: Client, task_queue: str, tmp_path: Path):
    log: list[Any] = []
    registry = make_registry(log)
    model = write_script(
        tmp_path,
        [
            calls(("c1", "get_weather", {"city": "Paris"}), ("c2", "add", {"a": 2, "b": 3})),
            calls(("c3", "add", '{"a": 5, "b": 7}')),
            answer("Paris is 21C; 2+3=5; 5+7=12"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        dt = DurableTools(client, task_queue)
        run = await dt.start("weather and sums", model=model)
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        assert result.final_answer == "Paris is 21C; 2+3=5; 5+7=12"
        assert result.turns == 3 and result.tool_calls == 3
        timeline = await run.timeline()
        conversation = await run.conversation()
        snapshot = await run.status()
    assert [(r.call_id, r.tool, r.status) for r in timeline] == [
        ("c1", "get_weather", "completed"),
        ("c2", "add", "completed"),
        ("c3", "add", "completed"),
    ]
    tool_messages = {m.tool_call_id: m.content for m in conversation if m.role == "tool"}
    assert '"temperature_c": 21' in (tool_messages["c1"] or "").replace(":21", ": 21")
    assert tool_messages["c3"] == "12"
    assert sorted(log, key=str) == sorted(
        [("get_weather", "Paris"), ("add", 2, 3), ("add", 5, 7)], key=str
    )
    assert snapshot.status == RunStatus.COMPLETED
    history = await run.handle.fetch_history()
    # One activity type per tool, named after the tool.
    assert scheduled_activities(history).count("add") == 2
    assert "get_weather" in scheduled_activities(history)


async def test_invalid_arguments_repair_message_and_no_activity(
    client: Client, task_queue: str, tmp_path: Path
):
    log: list[Any] = []
    registry = make_registry(log)
    model = write_script(
        tmp_path,
        [
            calls(
                ("bad_json", "add", '{"a": 1, "b": '),
                ("bad_type", "add", {"a": "one", "b": 2}),
                ("extra", "add", {"a": 1, "b": 2, "c": 3}),
                ("ghost", "delete_everything", {}),
            ),
            answer("gave up"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("try", model=model)
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED
    assert log == []  # nothing ran
    history = await run.handle.fetch_history()
    tool_activities = [
        n for n in scheduled_activities(history) if not n.startswith("durable_tools.")
    ]
    assert tool_activities == []
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert set(replies) == {"bad_json", "bad_type", "extra", "ghost"}  # every call id answered
    assert "bad_json" in replies["bad_json"] and "JSON" in replies["bad_json"]
    assert "a" in replies["bad_type"] and "string" not in replies["bad_type"].split("a")[0]
    assert "c" in replies["extra"]
    assert "delete_everything" in replies["ghost"]
    assert {r.status for r in timeline} == {"invalid"}


async def test_parallel_and_batched_strategies(client: Client, task_queue: str, tmp_path: Path):
    spans: list[tuple[str, float, float]] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def slow(label: str) -> str:
        """Sleep a little and report."""
        start = time.monotonic()
        await asyncio.sleep(0.4)
        spans.append((label, start, time.monotonic()))
        return label

    def overlaps(a: tuple[str, float, float], b: tuple[str, float, float]) -> bool:
        return a[1] < b[2] and b[1] < a[2]

    step = calls(*[(f"p{i}", "slow", {"label": f"p{i}"}) for i in range(4)])
    async with running_worker(client, registry, task_queue):
        dt = DurableTools(client, task_queue)
        parallel = AgentConfig(
            model=write_script(tmp_path, [step, answer("done")]),
            strategy=ExecutionStrategy(mode="parallel", concurrency=4),
        )
        result = await (await dt.start("parallel", config=parallel)).result()
        assert result.status == RunStatus.COMPLETED
        assert len(spans) == 4
        assert all(overlaps(spans[0], s) for s in spans[1:])

        spans.clear()
        batched = AgentConfig(
            model=write_script(tmp_path, [step, answer("done")]),
            strategy=ExecutionStrategy(mode="batched", batch_size=2),
        )
        run = await dt.start("batched", config=batched)
        assert (await run.result()).status == RunStatus.COMPLETED
        by_label = {s[0]: s for s in spans}
        assert overlaps(by_label["p0"], by_label["p1"])
        assert overlaps(by_label["p2"], by_label["p3"])
        first_batch_end = max(by_label["p0"][2], by_label["p1"][2])
        assert min(by_label["p2"][1], by_label["p3"][1]) >= first_batch_end
        conversation = await run.conversation()
        # Results come back in the order the model asked for them.
        assert [m.tool_call_id for m in conversation if m.role == "tool"] == [
            "p0",
            "p1",
            "p2",
            "p3",
        ]

        spans.clear()
        sequential = AgentConfig(model=write_script(tmp_path, [step, answer("done")]))
        assert (await (await dt.start("seq", config=sequential)).result()).turns == 2
        assert not any(overlaps(a, b) for a in spans for b in spans if a is not b)


async def test_flaky_tool_retries_with_the_same_idempotency_key(
    client: Client, task_queue: str, tmp_path: Path
):
    seen: list[tuple[str, int]] = []
    registry = ToolRegistry()

    @registry.tool(idempotent=True, retry=RetrySpec(initial_interval=0.05, maximum_attempts=5))
    def charge(amount: int, ctx: ToolContext) -> str:
        """Charge an amount, idempotently."""
        seen.append((ctx.idempotency_key, ctx.attempt))
        if ctx.attempt < 3:
            raise ConnectionError("payment gateway unreachable")
        return f"charged {amount}"

    model = write_script(tmp_path, [calls(("pay1", "charge", {"amount": 5})), answer("ok")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model, run_id=task_queue)
        result = await run.result()
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED
    assert [attempt for _, attempt in seen] == [1, 2, 3]
    assert {key for key, _ in seen} == {f"{task_queue}/pay1"}
    assert timeline[0].status == "completed" and timeline[0].attempts == 3


async def test_mutating_tool_does_not_retry_a_timeout_but_retries_clean_errors(
    client: Client, task_queue: str, tmp_path: Path
):
    attempts: dict[str, list[int]] = {"hang": [], "flaky": []}
    registry = ToolRegistry()

    @registry.tool(start_to_close_timeout=0.5, retry=RetrySpec(initial_interval=0.05))
    async def send_email(to: str, ctx: ToolContext) -> str:
        """Send an email (not idempotent)."""
        attempts["hang" if to == "slow@x" else "flaky"].append(ctx.attempt)
        if to == "slow@x":
            await asyncio.sleep(5)
        if ctx.attempt < 2:
            raise ToolExecutionError("SMTP 451 try later", retryable=True)
        return "sent"

    model = write_script(
        tmp_path,
        [
            calls(("e1", "send_email", {"to": "slow@x"}), ("e2", "send_email", {"to": "ok@x"})),
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("mail", model=model)
        await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
    assert attempts["hang"] == [1]  # a timeout of a non-idempotent tool is not retried
    assert timeline["e1"].status == "failed" and timeline["e1"].error_kind == "ToolTimeout"
    assert attempts["flaky"] == [1, 2]  # a clean retryable error is
    assert timeline["e2"].status == "completed" and timeline["e2"].attempts == 2


async def test_sentinel_secret_never_enters_history(
    client: Client, task_queue: str, tmp_path: Path
):
    sentinel = "sk-SENTINEL-7f3a9c2e"
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def call_api(
        path: str, api_key: Annotated[str, Injected("api_key", secret=True)], ctx: ToolContext
    ) -> str:
        """Call an API with a worker-side key."""
        assert api_key == sentinel and ctx.secret("api_key") == sentinel
        if path == "/fail":
            raise ToolExecutionError(f"upstream rejected key {api_key}", retryable=False)
        return f"GET {path} ok"

    model = write_script(
        tmp_path,
        [
            calls(("a1", "call_api", {"path": "/users"}), ("a2", "call_api", {"path": "/fail"})),
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue, secrets={"api_key": sentinel}):
        run = await DurableTools(client, task_queue).start("use the api", model=model)
        result = await run.result()
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert replies["a1"] == "GET /users ok"
    assert "[redacted]" in replies["a2"]
    history = await run.handle.fetch_history()
    assert sentinel not in history.to_json()


async def test_limits_end_the_run_with_a_clear_status(
    client: Client, task_queue: str, tmp_path: Path
):
    registry = make_registry([])
    loop_step = calls(("x", "add", {"a": 1, "b": 1}))
    async with running_worker(client, registry, task_queue):
        dt = DurableTools(client, task_queue)
        config = AgentConfig(
            model=write_script(tmp_path, [loop_step] * 10), limits=Limits(max_turns=3)
        )
        result = await (await dt.start("loop", config=config)).result()
        assert result.status == RunStatus.LIMIT_REACHED and "max_turns" in (result.reason or "")
        config = AgentConfig(
            model=write_script(
                tmp_path, [calls(*[(f"c{i}", "add", {"a": i, "b": 0}) for i in range(5)])]
            ),
            limits=Limits(max_tool_calls_per_turn=4),
            on_invalid_call="fail",  # else the calls over the limit get a repair message
        )
        result = await (await dt.start("wide", config=config)).result()
        assert result.status == RunStatus.LIMIT_REACHED
        assert "max_tool_calls_per_turn" in (result.reason or "")


async def test_steer_and_cancel(client: Client, task_queue: str, tmp_path: Path):
    started = asyncio.Event()
    cancelled = asyncio.Event()
    registry = ToolRegistry()

    @registry.tool(read_only=True, heartbeat_timeout=1.0, start_to_close_timeout=60)
    async def long_job(ctx: ToolContext) -> str:
        """A long job that stops when cancelled."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "finished"

    model = write_script(tmp_path, [calls(("j1", "long_job", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await asyncio.wait_for(started.wait(), 10)
        await run.steer("please hurry")
        await run.cancel("operator stopped it")
        result = await asyncio.wait_for(run.result(), 20)
        await asyncio.wait_for(cancelled.wait(), 10)
        events = [e.event for e in await run.events()]
    assert result.status == RunStatus.CANCELLED
    assert result.reason == "operator stopped it"
    assert "run.steered" in events and "tool.cancelled" in events


async def test_continue_as_new_keeps_the_conversation(
    client: Client, task_queue: str, tmp_path: Path
):
    registry = make_registry([])
    steps = [calls((f"c{i}", "add", {"a": i, "b": 1})) for i in range(12)] + [answer("sum done")]
    config = AgentConfig(
        model=write_script(tmp_path, steps),
        continue_as_new_after_events=30,
        limits=Limits(max_turns=50),
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("count", config=config)
        result = await run.result()
        snapshot = await run.status()
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED and result.turns == 13
    assert snapshot.continued >= 2
    tool_replies = [m.content for m in conversation if m.role == "tool"]
    assert tool_replies == [str(i + 1) for i in range(12)]
    assert conversation[0].role == "user" and conversation[0].content == "count"


async def test_search_tools_discovers_deferred_tools(
    client: Client, task_queue: str, tmp_path: Path
):
    registry = ToolRegistry()

    @registry.tool(read_only=True, loading="deferred", tags=("billing",))
    def refund_invoice(invoice_id: str) -> str:
        """Refund a customer invoice."""
        return f"refunded {invoice_id}"

    model = write_script(
        tmp_path,
        [
            calls(("early", "refund_invoice", {"invoice_id": "i1"})),
            calls(("s1", "search_tools", {"query": "refund invoice"})),
            calls(("r1", "refund_invoice", {"invoice_id": "i1"})),
            answer("refunded"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("refund", model=model)
        assert (await run.result()).status == RunStatus.COMPLETED
        replies = {
            m.tool_call_id: m.content or "" for m in await run.conversation() if m.role == "tool"
        }
    assert (
        "no tool of that name" in replies["early"]
    )  # deferred tools are not callable before discovery
    assert "refund_invoice" in replies["s1"]
    assert replies["r1"] == "refunded i1"


async def test_activities_carry_ui_summaries_unless_turned_off(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    from temporalio.contrib.pydantic import pydantic_data_converter

    registry = make_registry([])
    steps = [calls(("c1", "add", {"a": 2, "b": 3})), answer("5")]

    def summaries(history: Any) -> dict[str, str]:
        found = {}
        converter = pydantic_data_converter.payload_converter
        for event in history.events:
            if event.HasField("activity_task_scheduled_event_attributes") and event.HasField(
                "user_metadata"
            ):
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                found[name] = converter.from_payload(event.user_metadata.summary, str)
        return found

    async with running_worker(client, registry, task_queue):
        dt = DurableTools(client, task_queue)
        run = await dt.start("sum", config=AgentConfig(model=write_script(tmp_path, steps)))
        await run.result()
        quiet = await dt.start(
            "sum",
            config=AgentConfig(model=write_script(tmp_path, steps), activity_summaries=False),
        )
        await quiet.result()
    shown = summaries(await run.handle.fetch_history())
    assert shown["add"].startswith("add c1 ") and "a=2" in shown["add"]
    assert shown["durable_tools.model"].startswith("model scripted:")  # the last: turn 2
    assert shown["durable_tools.model"].endswith(" turn 2")
    hidden = summaries(await quiet.handle.fetch_history())
    assert "add" not in hidden and "durable_tools.model" not in hidden


async def test_reused_call_ids_get_distinct_keys_and_duplicates_are_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    keys: list[str] = []
    registry = ToolRegistry()

    @registry.tool(idempotent=True)
    def record(n: int, ctx: ToolContext) -> str:
        """Record a number."""
        keys.append(ctx.idempotency_key)
        return f"recorded {n}"

    model = write_script(
        tmp_path,
        [
            calls(("call_0", "record", {"n": 1})),
            calls(("call_0", "record", {"n": 2}), ("call_0", "record", {"n": 3})),
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("ids", model=model, run_id=task_queue)
        assert (await run.result()).status == RunStatus.COMPLETED
        replies = [m.content or "" for m in await run.conversation() if m.role == "tool"]
    # The same id in a later turn is a different call: a different key, and it runs.
    assert keys == [f"{task_queue}/call_0", f"{task_queue}/call_0#1"]
    assert replies[:2] == ["recorded 1", "recorded 2"]
    assert "not unique" in replies[2]  # the in-turn duplicate never ran


async def test_a_tool_the_worker_cannot_prepare_goes_back_to_the_model(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    from durable_tools import Identity, OAuthRequirement

    registry = ToolRegistry()

    @registry.tool(read_only=True, oauth=OAuthRequirement(provider="github"))
    def list_repos() -> list[str]:
        """The user's repositories."""
        return []

    model = write_script(tmp_path, [calls(("g1", "list_repos", {})), answer("no access")])
    async with running_worker(client, registry, task_queue):  # no OAuth broker configured
        run = await DurableTools(client, task_queue).start(
            "repos", model=model, identity=Identity(user="u")
        )
        result = await run.result()
        reply = next(m.content for m in await run.conversation() if m.role == "tool") or ""
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED
    assert "no OAuth broker" in reply and "g1" in reply
    assert timeline[0].status == "failed"


async def test_a_model_that_fails_for_good_fails_the_run_visibly(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    from temporalio.client import WorkflowFailureError

    registry = make_registry([])
    model = write_script(tmp_path, [calls(("c1", "add", {"a": 1, "b": 1}))])  # no turn 2
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("short script", model=model)
        with pytest.raises(WorkflowFailureError) as failed:
            await run.result()
        snapshot = await run.status()
    assert "model call failed" in str(failed.value.cause)
    assert snapshot.status == RunStatus.FAILED and "model call failed" in (snapshot.reason or "")
    description = await run.handle.describe()
    assert description.typed_search_attributes.get(AGENT_STATUS) == "failed"


@pytest.mark.parametrize(
    ("agent", "prefix"),
    [("support", "support-"), ("Support Desk!", "support-desk-"), ("Ünï", "n-"), ("ü", "run-")],
)
async def test_a_run_id_starts_with_its_agent_name(
    client: Client, task_queue: str, agent: str, prefix: str
) -> None:
    # The UI's list shows workflow ids: each says which agent the run is, without a click.
    tools = DurableTools(client, task_queue)
    run = await tools.start("hi", config=AgentConfig(name=agent, model="scripted:none.json"))
    await run.handle.terminate("not needed")
    assert run.run_id.startswith(prefix) and len(run.run_id) == len(prefix) + 12


async def test_a_prompt_cannot_plant_markdown_in_the_uis_summary(
    client: Client, task_queue: str
) -> None:
    # The UI renders a run's summary as markdown, and a prompt may be an end user's text.
    tools = DurableTools(client, task_queue)
    prompt = "Pay [here](https://evil.example)\nnow `x`"
    run = await tools.start(prompt, config=AgentConfig(name="desk", model="scripted:none.json"))
    summary = await (await run.handle.describe()).static_summary()
    await run.handle.terminate("not needed")
    assert summary == r"desk: Pay \[here\]\(https://evil.example\) now \`x\`"
