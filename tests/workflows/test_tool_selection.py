"""Per-turn tool selection (`AgentConfig.tool_selector`), on a real dev server with a real
OpenAI-compatible HTTP server on 127.0.0.1: the model is sent only the chosen tools, the
turn's calls are checked against them, and a broken selector ends the run clearly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.worker import ToolSelection, workflow_runner
from durable_tools.worker._selectors import ToolSelectorsInterceptor
from durable_tools.workflows import AgentWorkflow
from fake_openai import FakeOpenAIServer, chat_completion, tool_call
from support import answer, assert_not_wedged, running_worker, write_script


def phases() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True, tags=("research",))
    def search(query: str) -> str:
        """Search the web."""
        return f"found {query}"

    @registry.tool(tags=("write",))
    def publish(text: str) -> str:
        """Publish a post."""
        return f"published {text}"

    return registry


def research_then_write(selection: ToolSelection) -> list[str]:
    """Research first; once a tool answered, only writing."""
    phase = "write" if any(m.role == "tool" for m in selection.messages) else "research"
    return [name for name, spec in selection.tools.items() if phase in spec.tags]


def offered_names(request: Any) -> list[str]:
    return sorted(tool["function"]["name"] for tool in request.json.get("tools") or [])


async def test_each_turn_the_model_is_sent_only_the_tools_the_selector_chose(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [
        # Turn 1 offers only `search`; the model also tries `publish`: refused.
        chat_completion(
            tool_calls=[
                tool_call("s1", "search", '{"query": "temporal"}'),
                tool_call("p0", "publish", '{"text": "too early"}'),
            ]
        ),
        chat_completion(tool_calls=[tool_call("p1", "publish", '{"text": "post"}')]),
        chat_completion(content="done"),
    ]
    published: list[str] = []
    registry = phases()
    registry.use(type("Spy", (), {"before": lambda self, call: published.append(call.tool.name)})())
    with FakeOpenAIServer(answers) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with running_worker(
            client, registry, task_queue, tool_selectors={"phases": research_then_write}
        ):
            config = AgentConfig(model="openai:fake-model", tool_selector="phases")
            run = await DurableTools(client, task_queue).start("write a post", config=config)
            result = await run.result()
            conversation = await run.conversation()
            history = await run.handle.fetch_history()
        requests = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert result.status == RunStatus.COMPLETED and result.final_answer == "done"
    assert [offered_names(r) for r in requests] == [["search"], ["publish"], ["publish"]]
    texts = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert texts["s1"] == "found temporal" and texts["p1"] == "published post"
    assert "not run" in texts["p0"] and "published" not in texts["p0"]
    assert published == ["search", "publish"]  # the refused call never reached the worker
    # A replay runs the selectors too: a replayer needs the worker's.
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(strict=True),
        interceptors=[ToolSelectorsInterceptor({"phases": research_then_write})],
    )
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None, replayed.replay_failure


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        ({}, "tool selector 'phases' is not registered on this worker (registered: none)"),
        ({"phases": lambda selection: 1 / 0}, "ZeroDivisionError"),
        ({"phases": lambda selection: "search"}, "returned a string, not names"),
        ({"phases": lambda selection: [None]}, "NoneType 'None', not a name"),
    ],
)
async def test_a_missing_or_broken_selector_ends_the_run_naming_it(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    selectors: dict[str, Any],
    expected: str,
) -> None:
    model = write_script(tmp_path, [answer("never")])
    async with running_worker(client, phases(), task_queue, tool_selectors=selectors):
        config = AgentConfig(model=model, tool_selector="phases")
        run = await DurableTools(client, task_queue).start("go", config=config)
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.FAILED
    assert expected in (result.reason or "")
    assert "tool selector 'phases'" in (result.reason or "")


def test_a_worker_refuses_selectors_that_are_not_named_functions() -> None:
    from durable_tools.workflows.catalog._selection import check_selectors

    with pytest.raises(TypeError, match="not callable"):
        check_selectors({"x": "not a function"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="is not a name"):
        check_selectors({"": research_then_write})
