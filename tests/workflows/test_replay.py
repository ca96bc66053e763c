"""Histories recorded from real runs must replay against today's workflow code.

A change that would make runs in flight non-deterministic fails here, in CI, instead of
in production. Re-record with `tests/workflows/record_histories.py` only for changes that
are compatible by design (and then check the diff of the JSON).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_tools.worker import workflow_runner
from durable_tools.workflows import AgentWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_histories_are_checked_in() -> None:
    assert {p.stem for p in HISTORIES} >= {
        "tools_and_repairs",
        "approvals",
        "continued",
        "subagent",
        "subagent_waits",
        "subagent_waits_child",
        "subagent_notice_token",
        "subagent_notice_token_child",
        "callbacks",
        "packed_catalog",
        "short_wire",
        "older_worker",
        "local_catalog",
        "turn_limit_ended",
        "retry_budget_exceeded",
        "waits_unshown",
        "waits_shown",
        "compaction",
    }


@pytest.mark.parametrize("strict", [False, True], ids=["worker-sandbox", "strict-sandbox"])
@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_recorded_history_replays(path: Path, strict: bool) -> None:
    # Strict: the workflow code re-imported under the sandbox's restrictions, as
    # `make test-sandbox` runs it; the worker's default passes it through.
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(strict=strict),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
