"""Agent runs on a calendar: `DurableTools`' schedules, on Temporal Schedules.

A schedule starts the agent workflow with one `AgentInput`, built and checked as
`DurableTools.start` builds it (the same config resolution and search attributes); its
runs are named `<schedule id>-<scheduled time>` by Temporal, so every run says which
schedule started it. See docs/schedules.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleListActionStartWorkflow,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)

from durable_tools.client.start._options import start_attributes, start_summary
from durable_tools.protocol._run_io import INPUT_REVISION
from durable_tools.tools._context import Identity
from durable_tools.workflows import AgentConfig, AgentInput, AgentWorkflow

__all__ = [
    "CRON_MEMO",
    "DEFAULT_CATCHUP_WINDOW",
    "OVERLAP_POLICIES",
    "Overlap",
    "ScheduleSummary",
    "check_schedule_id",
    "list_schedules",
    "new_schedule",
]

Overlap = Literal[
    "skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"
]

OVERLAP_POLICIES: dict[str, ScheduleOverlapPolicy] = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
    "buffer_all": ScheduleOverlapPolicy.BUFFER_ALL,
    "cancel_other": ScheduleOverlapPolicy.CANCEL_OTHER,
    "terminate_other": ScheduleOverlapPolicy.TERMINATE_OTHER,
    "allow_all": ScheduleOverlapPolicy.ALLOW_ALL,
}
"""What a schedule does when a run is due while the last one still runs (for example,
waits for an approval): `skip` (the default) starts none."""

DEFAULT_CATCHUP_WINDOW = timedelta(minutes=5)
"""How late a run missed while the server was down may still start: after an outage only
the runs due within this window start, so a week's outage is not a week of runs at
once. Temporal's own default is a year."""

_MIN_CATCHUP = timedelta(seconds=10)  # the server refuses shorter windows
_MAX_ID_CHARS = 200  # with "-<scheduled time>" appended, within a workflow id's length


class ScheduleSummary(BaseModel):
    """One line of `durable-tools schedule list`."""

    schedule_id: str
    agent_workflow: bool
    """Whether it starts the agent workflow (schedules of other workflows are listed too)."""
    cron: list[str]
    paused: bool
    note: str | None = None
    next_runs: list[datetime]
    recent_runs: list[str]
    """Workflow ids of its latest runs, oldest first."""


def check_schedule_id(schedule_id: str) -> str:
    """The id, or ValueError naming what is wrong with it.

    It names the schedule and prefixes its runs' ids: printable, no spaces, at most 200
    characters (Temporal appends the scheduled time to it).
    """
    if not 0 < len(schedule_id) <= _MAX_ID_CHARS:
        raise ValueError(f"a schedule id has 1-{_MAX_ID_CHARS} characters, not {len(schedule_id)}")
    if not schedule_id.isprintable() or any(c.isspace() for c in schedule_id):
        raise ValueError(f"invalid schedule id {schedule_id!r}: printable, without spaces")
    return schedule_id


async def new_schedule(
    client: Client,
    schedule_id: str,
    prompt: str,
    *,
    config: AgentConfig,
    task_queue: str,
    cron: Sequence[str],
    overlap: Overlap,
    catchup_window: timedelta,
    paused: bool,
    note: str | None,
    identity: Identity,
    granted_scopes: Sequence[str],
) -> Schedule:
    """The Temporal schedule that starts this run at `cron`'s times.

    Raises:
        ValueError: a bad id, no cron expression, an unknown overlap policy, a catch-up
            window under 10 s, or `versioning="auto_upgrade"` (a schedule's start action
            carries no versioning override: use `upgrade_on_continue`).
    """
    check_schedule_id(schedule_id)
    if not cron or any(not expression.strip() for expression in cron):
        raise ValueError("a schedule needs a cron expression, e.g. '0 9 * * MON-FRI'")
    if overlap not in OVERLAP_POLICIES:
        raise ValueError(f"overlap must be one of {', '.join(OVERLAP_POLICIES)}, not {overlap!r}")
    if catchup_window < _MIN_CATCHUP:
        raise ValueError(f"the catch-up window must be at least {_MIN_CATCHUP.seconds} s")
    if config.versioning == "auto_upgrade":
        raise ValueError(
            "a scheduled run cannot start with an auto-upgrade override (Temporal's "
            "schedule action has none): use versioning='upgrade_on_continue'"
        )
    action = ScheduleActionStartWorkflow(
        AgentWorkflow.run,
        AgentInput(
            prompt=prompt,
            config=config,
            identity=identity,
            granted_scopes=list(granted_scopes),
            revision=INPUT_REVISION,
        ),
        id=schedule_id,  # each run: "<schedule id>-<scheduled time>"
        task_queue=task_queue,
        typed_search_attributes=await start_attributes(client, config),
        static_summary=start_summary(config, prompt),
    )
    return Schedule(
        action=action,
        spec=ScheduleSpec(cron_expressions=list(cron)),
        policy=SchedulePolicy(overlap=OVERLAP_POLICIES[overlap], catchup_window=catchup_window),
        state=ScheduleState(paused=paused, note=note),
    )


async def list_schedules(client: Client, limit: int) -> list[ScheduleSummary]:
    """The namespace's schedules (up to `limit`), the agent's first."""
    found: list[ScheduleSummary] = []
    async for entry in await client.list_schedules():
        if len(found) >= limit:
            break
        listed, info = entry.schedule, entry.info
        found.append(
            ScheduleSummary(
                schedule_id=entry.id,
                agent_workflow=listed is not None
                and isinstance(listed.action, ScheduleListActionStartWorkflow)
                and listed.action.workflow == AgentWorkflow.__name__,
                cron=_cron_of(await entry.memo()),
                paused=bool(listed and listed.state.paused),
                note=(listed.state.note or None) if listed else None,
                next_runs=list(info.next_action_times) if info else [],
                recent_runs=[
                    action.action.workflow_id
                    for action in (info.recent_actions if info else [])
                    if isinstance(action.action, ScheduleActionExecutionStartWorkflow)
                ],
            )
        )
    found.sort(key=lambda s: (not s.agent_workflow, s.schedule_id))
    return found


CRON_MEMO = "durable_tools_cron"
"""The memo key keeping a schedule's cron expressions as given (the server keeps them
only translated into calendar specs)."""


def _cron_of(memo: object) -> list[str]:
    kept = memo.get(CRON_MEMO) if isinstance(memo, dict) else None
    return [str(c) for c in kept] if isinstance(kept, list) else []
