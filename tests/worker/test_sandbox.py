"""The worker's sandbox: durable-tools' workflow code passed through, or checked (strict)."""

from __future__ import annotations

import sys
import uuid

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

from durable_tools.worker import (
    PASSTHROUGH_MODULES,
    STRICT_SANDBOX_ENV,
    passthrough_modules,
    workflow_runner,
)

PROBED = "durable_tools.workflows.calls._pipeline"


@workflow.defn(sandboxed=True)
class ModuleProbe:
    """Answers which copy of the workflow code a run sees: the worker's or its own."""

    @workflow.run
    async def run(self) -> str:
        import durable_tools.workflows.calls._pipeline as pipeline

        return str(id(pipeline))


async def _probe(client: Client, *, strict: bool) -> bool:
    """Whether a run on a worker with this sandbox sees the worker's own module object."""
    task_queue = f"probe-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[ModuleProbe],
        workflow_runner=workflow_runner(strict=strict),
    ):
        seen = await client.execute_workflow(
            ModuleProbe.run, id=f"probe-{uuid.uuid4().hex}", task_queue=task_queue
        )
    __import__(PROBED)
    return seen == str(id(sys.modules[PROBED]))


async def test_workflow_code_is_imported_once_by_default(client: Client) -> None:
    # Passed through: every run shares the worker's module (no per-run re-import).
    assert await _probe(client, strict=False)


async def test_strict_sandbox_reimports_workflow_code_for_each_run(client: Client) -> None:
    # Strict: the run imported its own copy, under the sandbox's restrictions.
    assert not await _probe(client, strict=True)


@pytest.mark.parametrize(
    ("value", "strict"),
    [("", False), ("0", False), ("false", False), ("1", True), ("true", True), ("YES", True)],
)
def test_strict_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, strict: bool
) -> None:
    monkeypatch.setenv(STRICT_SANDBOX_ENV, value)
    modules = passthrough_modules()
    assert ("durable_tools" not in modules) is strict
    assert set(PASSTHROUGH_MODULES) <= set(modules)  # data modules: always
