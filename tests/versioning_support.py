"""A "build B" of the agent workflow for the versioning tests, and the CLI calls of a deploy.

`ChangedAgentWorkflow` is the agent workflow with one change an operator can see (its final
answer ends in ` (build B)`) and none a replay can: it adds no command, so a run started on
build A can move onto it. `changed_build()` is a worker plugin that serves it as
`AgentWorkflow` in place of the original.
"""

# No `from __future__ import annotations`: the sandbox re-imports this module for each run.

import asyncio
from collections.abc import Sequence

from pydantic import ValidationError
from temporalio import workflow
from temporalio.api.enums.v1 import RoutingConfigUpdateState
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentRequest
from temporalio.client import Client
from temporalio.plugin import SimplePlugin

from durable_tools import AgentResult
from durable_tools.workflows import AgentInput, AgentWorkflow

BUILD_B_MARK = " (build B)"


@workflow.defn(name="AgentWorkflow", failure_exception_types=[ValidationError])
class ChangedAgentWorkflow(AgentWorkflow):
    """Build B's agent workflow: the same loop, and a mark on its final answer."""

    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        super().__init__(input)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        result = await super().run(input)
        if result.final_answer is None:
            return result
        return result.model_copy(update={"final_answer": result.final_answer + BUILD_B_MARK})


def _swap(workflows: Sequence[type] | None) -> list[type]:
    return [ChangedAgentWorkflow if w is AgentWorkflow else w for w in workflows or ()]


def changed_build() -> SimplePlugin:
    """A plugin (after `DurableToolsPlugin`) serving `ChangedAgentWorkflow` instead."""
    return SimplePlugin("tests.changed_build", workflows=_swap)


async def temporal(cli: str, address: str, *args: str) -> tuple[int, str]:
    """Run `temporal ARGS --address ADDRESS` without blocking the workers of this loop."""
    process = await asyncio.create_subprocess_exec(
        cli,
        *args,
        "--address",
        address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    return process.returncode or 0, output.decode()


async def set_current(client: Client, cli: str, deployment: str, build_id: str) -> None:
    """`temporal worker deployment set-current-version`, once the build's worker has polled;
    returns when the server has sent the new routing to every task queue.

    The server knows a version only after one of its workers polled; until then the
    command fails, and is retried (for at most 30 s). The command returns before the
    routing reaches the task queues: until it does, tasks still go to the old build.
    """
    address = client.service_client.config.target_host
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        code, output = await temporal(
            cli,
            address,
            "worker",
            "deployment",
            "set-current-version",
            "--deployment-name",
            deployment,
            "--build-id",
            build_id,
            "--yes",
        )
        if code == 0:
            break
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"set-current-version {build_id} failed: {output}")
        await asyncio.sleep(0.2)
    request = DescribeWorkerDeploymentRequest(
        namespace=client.namespace, deployment_name=deployment
    )
    while True:
        info = (
            await client.workflow_service.describe_worker_deployment(request)
        ).worker_deployment_info
        if (
            info.routing_config.current_deployment_version.build_id == build_id
            and info.routing_config_update_state
            == RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED
        ):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the routing to {build_id} never reached the task queues")
        await asyncio.sleep(0.05)
