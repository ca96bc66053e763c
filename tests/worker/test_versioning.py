"""Worker Deployment Versioning: runs that wait for approval across a deploy (dev server)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.client import Client, WorkflowHandle

import cli_support
from cli_support import cli
from durable_tools import AgentConfig, AgentRun, DurableTools, RunStatus, ToolRegistry, build_worker
from durable_tools.worker import deployment_version
from support import answer, calls, wait_for, write_script
from temporal_binary import temporal_cli
from versioning_support import BUILD_B_MARK, changed_build, set_current

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def approval_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    return registry


async def versioning_of(handle: WorkflowHandle[Any, Any]) -> tuple[str, int]:
    """The build that completed the run's last workflow task, and its behaviour."""
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    return info.deployment_version.build_id, info.behavior


async def paused(run: AgentRun) -> str:
    snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
    return snapshot.pending_approvals[0].call_id


async def test_a_deploy_leaves_paused_runs_on_their_build_and_moves_the_others(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    cli = temporal_cli()
    deployment = f"dt-{uuid.uuid4().hex[:8]}"
    registry = approval_registry()
    model = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A1"})), answer("done")])
    tools = DurableTools(client, task_queue)

    def start(versioning: str) -> Any:
        config = AgentConfig(model=model, versioning=versioning)  # type: ignore[arg-type]
        return tools.start("refund A1", config=config)

    build_a = build_worker(
        client,
        registry,
        task_queue=task_queue,
        deployment_version=deployment_version(deployment, "A"),
    )
    async with build_a:
        await set_current(client, cli, deployment, "A")
        pinned, auto, on_continue = (
            await start("pinned"),
            await start("auto_upgrade"),
            await start("upgrade_on_continue"),
        )
        waiting = [(run, await paused(run)) for run in (pinned, auto, on_continue)]
        for run, _ in waiting:
            assert await versioning_of(run.handle) == (
                "A",
                VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
            )

        build_b = build_worker(
            client,
            registry,
            task_queue=task_queue,
            deployment_version=deployment_version(deployment, "B"),
            plugins=[changed_build()],
        )
        async with build_b:
            await set_current(client, cli, deployment, "B")
            for run, call_id in waiting:
                assert await run.approve(call_id, decider="alice") == "approved"

            # Pinned: finishes on the code it started with.
            result = await pinned.result()
            assert (result.status, result.final_answer) == (RunStatus.COMPLETED, "done")
            assert (await versioning_of(pinned.handle))[0] == "A"
            # Auto-upgrade: its next task ran on build B's changed workflow.
            result = await auto.result()
            assert result.final_answer == "done" + BUILD_B_MARK
            assert (await versioning_of(auto.handle))[0] == "B"
            # Upgrade on continue: the turn ended on A, the run continued as new onto B.
            result = await on_continue.result()
            assert result.final_answer == "done" + BUILD_B_MARK
            assert (await versioning_of(on_continue.handle))[0] == "B"
            details = [
                e.detail for e in await on_continue.events() if e.event == "run.continuing_as_new"
            ]
            assert details and details[-1].endswith("onto the current build")

            # A new run starts on the current build.
            fresh = await start("pinned")
            await fresh.approve(await paused(fresh), decider="alice")
            result = await fresh.result()
            assert result.final_answer == "done" + BUILD_B_MARK
            assert await versioning_of(fresh.handle) == (
                "B",
                VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
            )


async def test_every_versioning_choice_runs_on_an_unversioned_worker(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """An unversioned worker ignores `versioning`, also at continue-as-new (which a run
    that may change builds asks to go to the current build)."""
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def echo(n: int) -> str:
        """Echo n."""
        return str(n)

    turns = [calls((f"c{n}", "echo", {"n": n})) for n in range(6)]
    model = write_script(tmp_path, [*turns, answer("done")])
    tools = DurableTools(client, task_queue)
    async with build_worker(client, registry, task_queue=task_queue):
        for versioning in ("pinned", "upgrade_on_continue", "auto_upgrade"):
            config = AgentConfig(
                model=model, versioning=versioning, continue_as_new_after_events=20
            )
            run = await tools.start("echo", config=config)
            result = await run.result()
            assert (result.status, result.final_answer) == (RunStatus.COMPLETED, "done")
            events = [e.event for e in await run.events()]
            assert "run.continued" in events  # it did continue as new


async def test_worker_deployment_flags_go_together_and_are_checked(
    cli_env: str, capsys: Any
) -> None:
    base = ("worker", "--tools", "durable_tools.demo.tools")
    for flags, message in (
        (("--deployment", "refunds"), "--deployment and --build-id go together"),
        (("--build-id", "v2"), "--deployment and --build-id go together"),
        (("--deployment", "re.funds", "--build-id", "v2"), "may not contain '.'"),
        (("--deployment", "refunds", "--build-id", "v 2"), "invalid build id"),
        (("--deployment", "refunds", "--build-id", "v2\u202e"), "invalid build id"),
        (("--deployment", "r" * 256, "--build-id", "v2"), "invalid deployment name"),
    ):
        code, _, err = await cli(capsys, *base, *flags)
        assert code == 2 and message in err, (flags, err)
