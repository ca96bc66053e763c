"""Catalogs of any size, on the real dev server.

The catalog crosses into history packed (compressed), beyond
`AgentConfig.max_advertised_tools` tools are deferred and found through `search_tools`,
a catalog too large even packed ends the run at once with the figures, and a run with
all 1,223 operations of GitHub's REST API completes against a fake GitHub on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import random
import string
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools._activities._types import CATALOG_ACTIVITY, MODEL_ACTIVITY, ModelCall
from durable_tools.tools._catalog_pack import CATALOG_PACKED_ACTIVITY
from github_support import github_mock, github_registry
from support import (
    answer,
    assert_not_wedged,
    calls,
    local_activity_types,
    running_worker,
    scheduled_activities,
    write_script,
)

_FRUIT = ["apple", "banana", "cherry", "damson", "elderberry", "fig", "grape", "huckleberry"]


def fruit_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for fruit in _FRUIT:

        def pick(count: int, fruit: str = fruit) -> str:
            return f"picked {count} {fruit}"

        registry.register(
            pick,
            name=f"pick_{fruit}",
            description=f"Pick {fruit} from the orchard.",
            read_only=True,
        )
    return registry


def first_model_tools(history: WorkflowHistory) -> list[str]:
    """Names of the tool definitions the run's first model call was sent."""
    converter = pydantic_data_converter.payload_converter
    for event in history.events:
        attributes = event.activity_task_scheduled_event_attributes
        if event.HasField("activity_task_scheduled_event_attributes") and (
            attributes.activity_type.name == MODEL_ACTIVITY
        ):
            call = converter.from_payload(attributes.input.payloads[0], ModelCall)
            return [tool.name for tool in call.request.tools]
    raise AssertionError("no model call in the history")


async def test_tools_beyond_the_limit_are_deferred_and_found_by_search(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [
        calls(("early", "pick_huckleberry", {"count": 1})),
        calls(("s1", "search_tools", {"query": "pick huckleberries"})),
        calls(("late", "pick_huckleberry", {"count": 2})),
        calls(("a1", "pick_apple", {"count": 3})),
        answer("done"),
    ]
    config = AgentConfig(
        model=write_script(tmp_path, script),
        max_advertised_tools=3,
        continue_as_new_after_events=20,  # the packed catalog is carried over, too
    )
    async with running_worker(client, fruit_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pick", config=config)
        result = await run.result()
        replies = {
            m.tool_call_id: m.content or "" for m in await run.conversation() if m.role == "tool"
        }
        snapshot = await run.status()
        events = await run.events()
        await assert_not_wedged(run.handle)
        latest = await run.handle.fetch_history()
        started = latest.events[0].workflow_execution_started_event_attributes
        first_run = started.first_execution_run_id
        first = await client.get_workflow_handle(run.handle.id, run_id=first_run).fetch_history()
    assert result.status == RunStatus.COMPLETED, result.reason
    assert snapshot.continued >= 1
    assert first_model_tools(first) == ["pick_apple", "pick_banana", "pick_cherry", "search_tools"]
    activities = scheduled_activities(first)
    assert local_activity_types(first) == [CATALOG_PACKED_ACTIVITY]  # no round trip
    assert CATALOG_ACTIVITY not in activities and CATALOG_PACKED_ACTIVITY not in activities
    assert "no tool of that name" in replies["early"]
    assert replies["s1"].splitlines()[1].startswith("- pick_huckleberry:")
    assert replies["late"] == "picked 2 huckleberry"
    assert replies["a1"] == "picked 3 apple"
    started = [e.detail for e in events if e.event == "run.started"]
    assert started and started[0] is not None
    assert started[0].startswith("3 tools advertised, 5 found through search_tools (8 tools, ")


def model_calls_tools(history: WorkflowHistory) -> list[list[str] | None]:
    """For each model call of the history, the tool definitions it was sent by name, or
    None when it sent the reference to definitions stored before."""
    converter = pydantic_data_converter.payload_converter
    sent: list[list[str] | None] = []
    for event in history.events:
        attributes = event.activity_task_scheduled_event_attributes
        if event.HasField("activity_task_scheduled_event_attributes") and (
            attributes.activity_type.name == MODEL_ACTIVITY
        ):
            call = converter.from_payload(attributes.input.payloads[0], ModelCall)
            by_name = [tool.name for tool in call.request.tools]
            sent.append(None if call.tools_ref is not None else by_name)
    return sent


async def test_a_search_that_finds_a_tool_sends_the_new_definitions_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [
        calls(("s1", "search_tools", {"query": "pick huckleberries"})),
        calls(("late", "pick_huckleberry", {"count": 2})),
        calls(("a1", "pick_apple", {"count": 3})),
        answer("done"),
    ]
    config = AgentConfig(model=write_script(tmp_path, script), max_advertised_tools=3)
    async with running_worker(client, fruit_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pick", config=config)
        result = await run.result()
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.COMPLETED, result.reason
    sent = model_calls_tools(history)
    # Sent in full the first time and after the search changed the advertised set; by
    # reference while it stays as it was (the stored definitions are the model's tools).
    assert sent[0] == ["pick_apple", "pick_banana", "pick_cherry", "search_tools"]
    assert sent[1] is not None and "pick_huckleberry" in sent[1]
    assert sent[2:] == [None, None]


async def test_a_catalog_too_large_even_packed_fails_the_run_at_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    for i in range(500):
        # Hex digests barely compress: 500 tools of 8 kB stay over the budget packed.
        noise = "".join(hashlib.sha256(f"{i}-{j}".encode()).hexdigest() for j in range(128))
        registry.register(lambda: "x", name=f"noisy_{i}", description=noise)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "hello", config=AgentConfig(model=write_script(tmp_path, [answer("never")]))
        )
        result = await run.result()
        await assert_not_wedged(run.handle)
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.FAILED and result.turns == 0
    assert result.reason is not None
    assert "too large" in result.reason and "500 tools" in result.reason
    assert "bytes as JSON" in result.reason and "payload budget" in result.reason
    # Tried once (the error is final), and no model call.
    assert scheduled_activities(history) == []
    assert local_activity_types(history) == [CATALOG_PACKED_ACTIVITY]


@pytest.mark.slow
async def test_a_run_with_githubs_whole_rest_api_completes(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [
        calls(("s1", "search_tools", {"query": "list open pull requests of a repo"})),
        calls(("p1", "pulls_list", {"owner": "octo", "repo": "demo", "state": "open"})),
        calls(("s2", "search_tools", {"query": "create an issue comment"})),
        calls(
            (
                "c1",
                "issues_create_comment",
                {"owner": "octo", "repo": "demo", "issue_number": 7, "body": {"body": "LGTM"}},
            )
        ),
        answer("Commented on #7."),
    ]
    with github_mock() as github:
        registry = github_registry(github.url)
        assert len(registry.specs()) == 1223
        async with running_worker(client, registry, task_queue):
            started = time.monotonic()
            run = await DurableTools(client, task_queue).start(
                "Comment on the first open PR of octo/demo",
                config=AgentConfig(model=write_script(tmp_path, script)),
            )
            result = await run.result()
            print(f"GitHub-registry run: {time.monotonic() - started:.1f} s")
            replies = {
                m.tool_call_id: m.content or ""
                for m in await run.conversation()
                if m.role == "tool"
            }
            await assert_not_wedged(run.handle)
            history = await run.handle.fetch_history()
    assert result.status == RunStatus.COMPLETED, result.reason
    assert result.final_answer == "Commented on #7."
    offered = first_model_tools(history)
    assert len(offered) == 65 and offered[-1] == "search_tools"  # 64 + search_tools
    assert "pulls_list" not in offered and "issues_create_comment" not in offered
    assert "Fix the flaky test" in replies["p1"]
    assert "1001" in replies["c1"]
    requests: list[tuple[str, str, Any, Any]] = github.requests
    assert ("GET", "/repos/octo/demo/pulls", {"state": ["open"]}, None) in requests
    assert ("POST", "/repos/octo/demo/issues/7/comments", {}, {"body": "LGTM"}) in requests


async def test_a_megabyte_search_query_is_searched_by_its_start_and_never_wedges(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Stemming runs in the workflow task: a 1 MB query took ~3 s there, past the deadlock
    # detector, and the task failed on every retry. Only its first 2,000 characters count.
    draw = random.Random(20)  # seeded: the same words every run
    words = ("".join(draw.choice(string.ascii_lowercase) for _ in range(8)) for _ in range(110_000))
    query = "pick huckleberries " + " ".join(words)
    script = [
        calls(("s1", "search_tools", {"query": query})),
        calls(("late", "pick_huckleberry", {"count": 2})),
        answer("done"),
    ]
    config = AgentConfig(model=write_script(tmp_path, script), max_advertised_tools=3)
    async with running_worker(client, fruit_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pick", config=config)
        result = await run.result()
        replies = {
            m.tool_call_id: m.content or "" for m in await run.conversation() if m.role == "tool"
        }
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED, result.reason
    assert replies["s1"].splitlines()[1].startswith("- pick_huckleberry:")
    assert replies["late"] == "picked 2 huckleberry"
