"""The activity that bounds a large callback result: artifact store and secret scrubbing.

A callback tool runs on a client, and its answer reaches the run through an update. A
small answer is formatted in the workflow; one over the run's output limit is formatted
here instead, on the worker, exactly as a tool activity's result is (`format_result`):
the full output goes to the worker's artifact store, the model gets a bounded head and
the artifact's reference, and worker secrets are scrubbed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field
from temporalio import activity

from durable_tools._activities._runtime import ToolRuntime
from durable_tools.tools._formatting import format_result, to_tool_result
from durable_tools.tools._results import ToolOutcome

__all__ = ["CALLBACK_RESULT_ACTIVITY", "CallbackOutput", "callback_result_activity"]

CALLBACK_RESULT_ACTIVITY = "durable_tools.callback_result"


class CallbackOutput(BaseModel):
    """A callback call's accepted output, to bound into a `ToolOutcome`."""

    call_id: str
    tool_name: str
    output: Any = None
    limit_bytes: int
    redact: list[str] = Field(default_factory=list)


def callback_result_activity(runtime: ToolRuntime) -> Callable[..., Any]:
    """The `durable_tools.callback_result` activity bound to a worker's runtime."""

    @activity.defn(name=CALLBACK_RESULT_ACTIVITY)
    async def callback_result(request: CallbackOutput) -> ToolOutcome:
        # The store may write to disk or S3: off the event loop.
        return await asyncio.to_thread(
            format_result,
            to_tool_result(request.output),
            call_id=request.call_id,
            tool_name=request.tool_name,
            limit_bytes=request.limit_bytes,
            store=runtime.artifact_store,
            redact=request.redact,
            secrets=runtime.secret_values(),
        )

    return callback_result
