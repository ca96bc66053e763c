"""Run an agent from a workflow of your own: as a child workflow, or embedded in it.

`run_agent` / `start_agent` start the agent workflow as a child of the calling workflow
(approvals, steering and `durable-tools pending` address the child run as usual).
`AgentLoop` runs the same loop (`_runner.run_agent_loop`) inside the calling workflow
itself, and registers the agent workflow's handlers (one table, `_handlers.RunHandlers`)
on that workflow under a prefix, so they do not clash with the host's own.

Everything here is called from inside a workflow; it is deterministic.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from temporalio import workflow

from durable_tools.messages import Message
from durable_tools.protocol._records import RunEvent
from durable_tools.protocol._run_io import AgentInput, AgentResult, RunSnapshot
from durable_tools.protocol._types import AgentConfig
from durable_tools.tools._context import Identity
from durable_tools.workflows.loop._handlers import register_run_handlers
from durable_tools.workflows.loop._runner import run_agent_loop, snapshot
from durable_tools.workflows.run._carry import start_state

__all__ = ["AgentLoop", "run_agent", "start_agent"]

AGENT_WORKFLOW = "AgentWorkflow"

# Children started without an explicit id, per host workflow instance: the default id
# `<host id>.agent-<n>` must be the same on every replay, and a replay from scratch
# builds a new instance (so the count starts again with it).
_started: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _default_child_id() -> str:
    host = workflow.instance()
    try:
        number = _started.get(host, 0) + 1
        _started[host] = number
    except TypeError as error:  # __slots__ without __weakref__, or __eq__ without __hash__
        raise TypeError(
            "start_agent needs an explicit id= in this workflow: its instances cannot be "
            "weakly referenced or hashed, so children cannot be numbered"
        ) from error
    return f"{workflow.info().workflow_id}.agent-{number}"


async def start_agent(
    prompt: str,
    *,
    config: AgentConfig,
    identity: Identity | None = None,
    granted_scopes: Sequence[str] = (),
    id: str | None = None,
    task_queue: str | None = None,
    parent_close_policy: workflow.ParentClosePolicy = workflow.ParentClosePolicy.REQUEST_CANCEL,
    **child_options: Any,
) -> workflow.ChildWorkflowHandle[Any, AgentResult]:
    """Start an agent run as a child of the calling workflow and return its handle.

    Call it from inside a workflow. Approve, steer or cancel the child through its id
    (`handle.id`), exactly like a run started by a client: `durable-tools pending` lists
    it, and the host can signal it (`await handle.signal("steer", "...")`).

    Args:
        prompt: The user's request.
        config: The agent's configuration (model, tools, approval policy, limits).
        identity: On whose behalf the agent acts (default: nobody in particular).
        granted_scopes: Scopes the identity holds, for tools that require some.
        id: The child's workflow id; default `<host workflow id>.agent-<n>`, n counting
            the children this helper started in this host run (deterministic).
        task_queue: The task queue of a worker running the agent workflow; default the
            host's.
        parent_close_policy: What happens to the child when the host closes first;
            default: the child is asked to cancel (running tools stop cleanly).
        **child_options: Passed to `workflow.start_child_workflow` (e.g.
            `execution_timeout`, `static_summary`).

    Returns:
        The child's handle; `await handle` gives its `AgentResult`.
    """
    agent_input = AgentInput(
        prompt=prompt,
        config=config,
        identity=identity or Identity(),
        granted_scopes=list(granted_scopes),
    )
    return await workflow.start_child_workflow(
        AGENT_WORKFLOW,
        agent_input,
        id=id or _default_child_id(),
        task_queue=task_queue,
        result_type=AgentResult,
        parent_close_policy=parent_close_policy,
        **child_options,
    )


async def run_agent(
    prompt: str,
    *,
    config: AgentConfig,
    identity: Identity | None = None,
    granted_scopes: Sequence[str] = (),
    id: str | None = None,
    task_queue: str | None = None,
    parent_close_policy: workflow.ParentClosePolicy = workflow.ParentClosePolicy.REQUEST_CANCEL,
    **child_options: Any,
) -> AgentResult:
    """Run an agent as a child of the calling workflow and return how it ended.

    Takes the arguments of `start_agent`. A run that ends with a status (completed,
    denied, limit reached, cancelled by its `cancel` signal) returns its `AgentResult`;
    a run that fails raises `temporalio.exceptions.ChildWorkflowError`.
    """
    handle = await start_agent(
        prompt,
        config=config,
        identity=identity,
        granted_scopes=granted_scopes,
        id=id,
        task_queue=task_queue,
        parent_close_policy=parent_close_policy,
        **child_options,
    )
    return await handle


class AgentLoop:
    """The agent loop, run inside a workflow of your own instead of as its own workflow.

    Build it in the host's `@workflow.init` (or at the start of its run method), register
    its handlers, then `await loop.run()`. The loop uses the same activities as the agent
    workflow (catalog, model, tools), so the host's worker needs durable-tools' plugin
    (`build_worker(..., workflows=[Host])`).

    The embedded loop never continues-as-new (the host owns its history): keep embedded
    runs short, or run long agents with `run_agent` instead.

    Args:
        input: What an agent workflow would be started with.
    """

    def __init__(self, input: AgentInput) -> None:
        self._state = start_state(input)

    async def run(self) -> AgentResult:
        """Run the agent to its end and return how it ended."""
        return await run_agent_loop(self._state, continue_as_new=False)

    def status(self) -> RunSnapshot:
        """What the agent is doing now (also the `<prefix>status` query)."""
        return snapshot(self._state)

    def conversation(self) -> list[Message]:
        """The whole conversation so far (also the `<prefix>conversation` query)."""
        return self._state.conversation

    def events(self) -> list[RunEvent]:
        """The agent's event log (also the `<prefix>events` query)."""
        return self._state.events

    def register_handlers(self, prefix: str = "agent_") -> None:
        """Register the agent's handlers on the current (host) workflow, names prefixed.

        Registers every handler the agent workflow has (`RunHandlers`: the updates
        `decide`, `decide_batch`, `set_policy`, `revoke_grant`, `reissue_authorization`,
        `callback_result`, `answer_input`, with their validators; the signals `decision`,
        `authorization_completed`, `steer`, `steer_turn`, `cancel`; the queries
        `pending_callbacks`, `status`, `conversation`, `conversation_view`, `timeline`,
        `events`, `events_since`), each under `prefix + name` and checking its input as
        there: nothing a caller sends fails the host's workflow task. The prefix is also
        told to the parties outside the workflow that reach the loop on their own (the
        OAuth callback). With `prefix=""` the names are the agent workflow's own.

        Args:
            prefix: Put before each handler name: at most 64 ASCII letters, digits or
                `_ . : / -`.

        Raises:
            ValueError: the prefix is not valid, or one of the names is taken by a
                handler the host has already (its own, or another loop's).
        """
        register_run_handlers(self._state, prefix)
