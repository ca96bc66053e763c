"""The handle the inbox reads and decides a waiting run through: an agent run's, or a
host's under the prefix its runtime's handlers carry (a plain workflow with a
`ToolRuntime`, a Pydantic AI or OpenAI Agents run, an embedded `AgentLoop`).

The prefix is never taken from a request: it is what the host's worker reports
(`handler_prefixes`, the same discovery as `durable-tools pending`), so a page or a
decision can only reach handlers the run really has.
"""

from __future__ import annotations

import asyncio

from temporalio.client import WorkflowExecution
from temporalio.service import RPCError

from durable_tools.client import AgentRun, DurableTools
from durable_tools.client.runs._hosts import AGENT_WORKFLOW, handler_prefixes, waits_on

__all__ = ["HOST_QUERY_TIMEOUT", "run_handle"]

HOST_QUERY_TIMEOUT = 3.0
"""Seconds a host with several runtimes has, per runtime, to say what it waits for."""


async def run_handle(
    tools: DurableTools, run_id: str, execution: WorkflowExecution | None = None
) -> AgentRun:
    """The handle on run `run_id`'s handlers.

    An agent run's own; for a host, the prefix its worker lists handlers under (of a host
    with several runtimes, the first whose calls wait, as `durable-tools pending` shows).
    When the run cannot be described or its worker does not answer, the unprefixed
    handle: asking it then fails the way a missing run or worker always does.

    Args:
        tools: The client.
        run_id: The workflow id.
        execution: The run as listed, when the caller has it (saves describing it).
    """
    if execution is None:
        try:
            execution = await asyncio.wait_for(
                tools.client.get_workflow_handle(run_id).describe(), HOST_QUERY_TIMEOUT
            )
        except (RPCError, TimeoutError):
            return tools.run(run_id)
    if execution.workflow_type == AGENT_WORKFLOW:
        return tools.run(run_id)
    prefixes = await handler_prefixes(tools.client, execution)
    if len(prefixes) <= 1:
        return tools.run(run_id, prefix=prefixes[0] if prefixes else "")
    for prefix in prefixes:
        run = tools.run(run_id, prefix=prefix)
        try:
            if waits_on(await asyncio.wait_for(run.status(), HOST_QUERY_TIMEOUT)):
                return run
        except (RPCError, TimeoutError):
            continue
    return tools.run(run_id, prefix=prefixes[0])
