"""The agent loop as a Temporal workflow: the loop from `_runner`, the handlers from
`_handlers.RunHandlers`.

Model call -> the turn's tool calls through the call pipeline (`_pipeline`: validate ->
gate -> execute -> record) -> results back to the model, until the model answers without
tool calls or a limit is hit (`_runner.run_agent_loop`, which an `AgentLoop` embedded in
a user's workflow runs too). All state lives in one `RunState`. Everything here is
deterministic: tools, models and token stores are reached only through activities, and
the tools a run may use come from the catalog activity, recorded in history at start.

The handlers (decisions, steering, authorization, callbacks, questions, queries) are
inherited from `RunHandlers`, the one table an embedded `AgentLoop` registers too.
"""

# No `from __future__ import annotations` here: the sandbox re-imports this module for
# every run in strict mode, and string annotations would be evaluated anew each time.

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import FailureError

from durable_tools.protocol._run_io import AgentInput, AgentResult
from durable_tools.protocol._types import RunStatus
from durable_tools.workflows.loop._handlers import MAX_EVENTS_PAGE, RunHandlers
from durable_tools.workflows.loop._runner import (
    FAILED_RUN_PATCH,
    request_cancel,
    run_agent_loop,
)
from durable_tools.workflows.loop._token_stream import close_stream
from durable_tools.workflows.run._carry import start_state

__all__ = ["CLEAN_CANCEL_PATCH", "MAX_EVENTS_PAGE", "AgentWorkflow"]


# A start whose input does not validate (a hand-written `temporal workflow start`, say)
# fails the run with the validation error instead of failing its first task for ever.
@workflow.defn(name="AgentWorkflow", failure_exception_types=[ValidationError])
class AgentWorkflow(RunHandlers):
    """A durable agent run. Start it with an `AgentInput`; it returns an `AgentResult`.

    Its handlers (`decide`, `steer`, `status`, ...) are `RunHandlers`', unprefixed.
    """

    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self._state = start_state(input)

    def use_tool_selectors(self, selectors: Mapping[str, Callable[..., Any]]) -> None:
        """The worker's tool selectors (its interceptor calls this as the run starts)."""
        self._state.tool_selectors = selectors

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        # Temporal's cancellation (AgentRun.cancel, `temporal workflow cancel`, a parent
        # closing) ends the run the clean way the `cancel` signal does, then the execution
        # closes CANCELED: the loop runs in a task the cancellation cannot cut.
        loop = asyncio.ensure_future(self._run())
        cleanly = False
        while True:
            try:
                result = await asyncio.shield(loop)
            except asyncio.CancelledError:
                if loop.done():
                    raise
                if not workflow.patched(CLEAN_CANCEL_PATCH):
                    loop.cancel()  # as before: the cancellation cut the loop where it was
                    return await loop
                cleanly = True
                reason = workflow.cancellation_reason() or "cancelled through Temporal"
                request_cancel(self._state, reason)
                continue
            if cleanly and result.status == RunStatus.CANCELLED:
                raise asyncio.CancelledError(result.reason)
            return result

    async def _run(self) -> AgentResult:
        if not self._state.config.stream_tokens:
            return await self._run_loop()
        # A streaming run ends its companion stream when it ends (not when it continues
        # as new: that is no FailureError nor a cancellation, and the stream carries on).
        try:
            result = await self._run_loop()
        except (FailureError, asyncio.CancelledError):
            await close_stream(workflow.info().workflow_id)
            raise
        await close_stream(workflow.info().workflow_id)
        return result

    async def _run_loop(self) -> AgentResult:
        try:
            result = await run_agent_loop(self._state)
        except FailureError:
            # A session's message in flight (the first one's update-with-start, say) is
            # answered with the error before the execution fails: an update left running
            # would fail every workflow task where warnings are errors, and leave its
            # client with "workflow execution already completed" elsewhere.
            if self._state.session is not None and workflow.patched(FAILED_RUN_PATCH):
                await workflow.wait_condition(workflow.all_handlers_finished)
            raise
        if self._state.session is not None:
            # A session's `send_message` updates take their replies before the run ends.
            await workflow.wait_condition(workflow.all_handlers_finished)
        return result


CLEAN_CANCEL_PATCH = "temporal-cancel-is-clean"
"""Asked when Temporal's cancellation arrives: the run ends cleanly, then closes CANCELED
(a run cancelled before it replays the old way: the cancellation cut the loop)."""
