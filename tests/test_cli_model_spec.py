"""A model spec no worker could resolve is refused where the run starts: no run exists."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli, run_exists
from durable_tools import DurableTools
from durable_tools.models import register_model_adapter, unregister_model_adapter

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

REFUSED = {
    "nosuch:model": "unknown model provider 'nosuch'",
    "gpt-4o-mini": "is not PROVIDER:MODEL",
    ":gpt-4o": "is not PROVIDER:MODEL",
    "openai:": "incomplete",
    "openai: gpt-4o": "padded",
    "OpenAI:gpt-4o": "unknown model provider 'OpenAI'",
    "pydantic-ai:gpt-4o": "expected pydantic-ai:PROVIDER:MODEL",
    "pydantic-ai::gpt-4o": "expected pydantic-ai:PROVIDER:MODEL",
    "openai:gpt-4o\nopenai:other": "control characters",
    "scripted:\x1b[31mred": "control characters",
    "openai:gpt\u2028x": "control characters",
    "\u0430nthropic:claude": "unknown model provider '\\u0430nthropic'",  # Cyrillic a
    "openai:" + "g" * 5000: "too long",
}


@pytest.mark.parametrize("spec", list(REFUSED))
async def test_run_refuses_a_model_spec_before_the_run_exists(
    spec: str, client: Client, cli_env: str, capsys: Any
) -> None:
    run_id = f"spec-{uuid.uuid4().hex[:8]}"
    code, out, err = await cli(capsys, "run", "hello", "--model", spec, "--id", run_id)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and REFUSED[spec] in err, err
    assert "\x1b" not in err and "\u2028" not in err and len(err) < 600
    assert not await run_exists(client, run_id)


async def test_start_refuses_a_model_spec_before_the_run_exists(
    client: Client, task_queue: str
) -> None:
    tools = DurableTools(client, task_queue)
    for spec, said in REFUSED.items():
        run_id = f"spec-{uuid.uuid4().hex[:8]}"
        with pytest.raises(ValueError, match=said.replace("\\", "\\\\")):
            await tools.start("hello", model=spec, run_id=run_id)
        assert not await run_exists(client, run_id)


async def test_a_provider_registered_where_runs_start_is_accepted(
    client: Client, task_queue: str
) -> None:
    tools = DurableTools(client, task_queue)
    register_model_adapter("house", lambda rest: None)  # type: ignore[arg-type,return-value]
    try:
        run = await tools.start("hello", model="house:v1")
        pai = await tools.start("hello", model="pydantic-ai:google-gla:gemini-2.5-pro")
    finally:
        unregister_model_adapter("house")
    for started in (run, pai):
        assert await run_exists(client, started.run_id)
        await started.handle.terminate("test over")


async def test_run_takes_fallback_models_and_checks_each(
    client: Client, task_queue: str, cli_env: str, capsys: Any
) -> None:
    refused_id = f"spec-{uuid.uuid4().hex[:8]}"
    code, _, err = await cli(
        capsys,
        "run",
        "hi",
        "--model",
        "openai:gpt-4o",
        "--fallback-model",
        "nosuch:m",
        "--id",
        refused_id,
    )
    assert code == 2 and "unknown model provider 'nosuch'" in err
    assert not await run_exists(client, refused_id)
    run_id = f"spec-{uuid.uuid4().hex[:8]}"
    code, _, err = await cli(
        capsys,
        "run",
        "hi",
        "--model",
        "openai:gpt-4o",
        "--fallback-model",
        "anthropic:claude-sonnet-4-5",
        "--fallback-model",
        "scripted:x.json",
        "--id",
        run_id,
    )
    assert code == 0, err
    handle = client.get_workflow_handle(run_id)
    config = (await handle.fetch_history()).events[0]
    await handle.terminate("not needed")
    started = config.workflow_execution_started_event_attributes.input.payloads[0].data
    assert b'"fallback_models":["anthropic:claude-sonnet-4-5","scripted:x.json"]' in started
