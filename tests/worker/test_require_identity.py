"""Identity required per deployment: a worker (`build_worker(require_identity=True)`, or
`durable-tools worker --require-identity`) refuses runs that name no user or no tenant, at
their first step, so catalogs, grants and OAuth tokens are always scoped."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from durable_tools import DurableTools, Identity, RunStatus, ToolRegistry
from durable_tools.tools._catalog import IdentityIncomplete, missing_identity, require_identity
from support import answer, assert_not_wedged, calls, running_worker, write_script

PROGRAM = Path(sys.executable).parent / "durable-tools"


@pytest.mark.parametrize(
    ("identity", "missing"),
    [
        (None, ["user", "tenant"]),
        (Identity(), ["user", "tenant"]),
        (Identity(user="ana"), ["tenant"]),
        (Identity(tenant="acme"), ["user"]),
        (Identity(user="ana", tenant="   "), ["tenant"]),  # blank scopes nothing
        (Identity(user="\t\n", tenant="acme"), ["user"]),
        (Identity(user="ana", tenant="acme"), []),
        (Identity(user="ana", tenant="acme", session="s"), []),
    ],
)
def test_what_a_user_and_tenant_requirement_finds_missing(
    identity: Identity | None, missing: list[str]
) -> None:
    assert missing_identity(identity, ("tenant", "user")) == missing
    if missing:
        with pytest.raises(IdentityIncomplete, match="with a user and tenant; missing: "):
            require_identity(identity, ("user", "tenant"), "this worker")
    else:
        require_identity(identity, ("user", "tenant"), "this worker")


def registry(ran: list[str]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def ping() -> str:
        """Ping."""
        ran.append("ping")
        return "pong"

    return tools


def failure_text(error: BaseException | None) -> str:
    chain = []
    while error is not None:
        chain.append(str(error))
        error = error.__cause__
    return " | ".join(chain)


async def test_a_worker_that_requires_identity_refuses_runs_without_user_or_tenant(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(tmp_path, [calls(("p1", "ping", {})), answer("done")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, registry(ran), task_queue, require_identity=True):
        for identity in (None, Identity(user="ana"), Identity(user="ana", tenant=" ")):
            run = await tools.start("go", model=model, identity=identity)
            with pytest.raises(WorkflowFailureError) as refused:
                await run.result()
            await assert_not_wedged(run.handle)
            text = failure_text(refused.value.cause)
            assert "this worker serves runs only for an identity with a user and tenant" in text
            assert "missing: " + ("user, tenant" if identity is None else "tenant") in text
        assert ran == []  # no refused run reached a tool
        # A session is not required: user and tenant scope catalogs, grants and tokens.
        ok = await tools.start("go", model=model, identity=Identity(user="ana", tenant="acme"))
        assert (await ok.result()).status == RunStatus.COMPLETED
    assert ran == ["ping"]


async def test_without_the_option_a_run_needs_no_identity(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(tmp_path, [calls(("p1", "ping", {})), answer("done")])
    async with running_worker(client, registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        assert (await run.result()).status == RunStatus.COMPLETED


async def test_the_worker_command_takes_the_flag(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "DURABLE_TOOLS_TASK_QUEUE": task_queue,
    }
    worker = subprocess.Popen(
        [str(PROGRAM), "worker", "--tools", "durable_tools.demo.tools", "--graceful-shutdown",
         "1", "--require-identity"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )  # fmt: skip
    try:
        assert worker.stdout is not None
        banner: list[str] = []
        while not banner or not banner[-1].startswith("Ctrl-C"):
            line = await asyncio.to_thread(worker.stdout.readline)
            assert line, "".join(banner)
            banner.append(line)
        assert "identity: runs need a user and a tenant\n" in banner
        model = write_script(tmp_path, [answer("hello")])
        tools = DurableTools(client, task_queue)
        run = await tools.start("hello", model=model, identity=Identity(user="ana"))
        with pytest.raises(WorkflowFailureError) as refused:
            await run.result()
        assert "missing: tenant" in failure_text(refused.value.cause)
        full = Identity(user="ana", tenant="acme")
        run = await tools.start("hello", model=model, identity=full)
        assert (await run.result()).final_answer == "hello"
    finally:
        worker.terminate()
        await asyncio.to_thread(worker.communicate, timeout=30)
