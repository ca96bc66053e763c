"""The client side of callback tools: run a run's published calls here, answer them.

A callback tool has no worker body (`ToolRegistry.callback_tool`). The run publishes each
call (the `pending_callbacks` query) and waits; `serve_callbacks` polls for published
calls, runs the matching handler on this machine (a sync handler in a thread) and sends
the result back with the `callback_result` update, until the run ends.

Restarts on either side lose nothing: the run keeps waiting durably while no client (or
no worker) is there, and a call answered twice is answered once (the run rejects the
second answer as `CallbackAlreadyAnswered`, which the client treats as done). A handler
may therefore run twice for one call when the client restarts mid-call: a handler with
side effects can act once per `PendingCallback.idempotency_key`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from temporalio.client import (
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.protocol._callback_types import (
    CALLBACK_ALREADY_ANSWERED,
    CALLBACK_UNKNOWN,
    PendingCallback,
)
from durable_tools.protocol._limits import (
    MAX_CALLBACK_ERROR_CHARS,
    MAX_CALLBACK_RESULT_BYTES,
    check_handler_prefix,
)

__all__ = [
    "RUN_ENDED",
    "CallbackHandler",
    "CallbackRejected",
    "OnAnswer",
    "answer_callback",
    "handlers_from_module",
    "pending_callbacks",
    "serve_callbacks",
]

CallbackHandler = Callable[..., Any]
"""A callback tool's body on the client: called with the call's arguments as keyword
arguments; sync (run in a thread) or async; returns any JSON-able value (or a pydantic
model). An exception it raises is sent to the model as the tool's error."""

RUN_ENDED = "RunEnded"
"""`CallbackRejected.kind` when the run has ended: nothing waits for an answer."""

logger = logging.getLogger("durable_tools.callbacks")

_FAST_POLL = 0.05
"""Seconds between polls just after an answer; idle polls back off to `poll_interval`."""

_ENVELOPE_BYTES = 1_000
"""Room left for the call id, hash and JSON framing when a result is measured."""


class CallbackRejected(Exception):
    """The run refused an answer. `kind` is the rejection type (`CallbackOutputInvalid`,
    `CallbackAlreadyAnswered`, `CallbackUnknown`, `CallbackInvalid`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


async def pending_callbacks(
    handle: WorkflowHandle[Any, Any], *, prefix: str = ""
) -> list[PendingCallback]:
    """The callback calls a run has published and waits on (a query: needs a worker).

    Args:
        handle: The run's workflow, or the workflow an agent loop is embedded in.
        prefix: The embedded loop's handler prefix (`AgentLoop.register_handlers`);
            "" for an agent workflow.
    """
    found: list[PendingCallback] = await handle.query(
        check_handler_prefix(prefix) + "pending_callbacks", result_type=list[PendingCallback]
    )
    return found


async def answer_callback(
    handle: WorkflowHandle[Any, Any],
    pending: PendingCallback,
    *,
    output: Any = None,
    error: str | None = None,
    prefix: str = "",
    update_id: str | None = None,
) -> str:
    """Send the answer to one published call; returns the run's reply (`accepted`).

    `prefix` is the handler prefix of an agent loop embedded in `handle`'s workflow ("" for
    an agent workflow), as for `pending_callbacks`. `update_id` makes the answer
    idempotent: sent again under the same id (a client's retry), Temporal gives the first
    one's reply instead of delivering it twice.

    Raises:
        CallbackRejected: the run refused it (its `kind` and the reason). After
            `CallbackOutputInvalid` the call is still pending: answer it again.
    """
    body: dict[str, Any] = {"call_id": pending.call_id, "request_hash": pending.request_hash}
    if error is not None:
        body["error"] = error
    else:
        body["output"] = output
    try:
        reply: str = await handle.execute_update(
            check_handler_prefix(prefix) + "callback_result", body, result_type=str, id=update_id
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:  # the run has ended (or never existed)
            raise CallbackRejected(RUN_ENDED, f"the run cannot be answered: {err}") from None
        raise
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError):
            raise CallbackRejected(cause.type or "CallbackRejected", cause.message) from None
        raise CallbackRejected("CallbackRejected", str(cause or err)) from None
    return reply


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return to_jsonable_python(value)


async def _run_handler(handler: CallbackHandler, arguments: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(handler):
        return await handler(**arguments)
    result = await asyncio.to_thread(handler, **arguments)
    if inspect.isawaitable(result):
        return await result
    return result


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:MAX_CALLBACK_ERROR_CHARS]


OnAnswer = Callable[[PendingCallback, str], None]
"""Told of each call this client finished: the call, and `answered`, `failed: ...`,
`answered before` or `refused: ...`."""


async def _answer_one(
    handle: WorkflowHandle[Any, Any],
    pending: PendingCallback,
    handler: CallbackHandler,
    on_answer: OnAnswer | None,
    prefix: str,
) -> bool:
    """Run the handler and send its answer; True when the call needs nothing more."""
    said = await _answer(handle, pending, handler, prefix)
    if on_answer is not None:
        on_answer(pending, said)
    return True


async def _answer(
    handle: WorkflowHandle[Any, Any],
    pending: PendingCallback,
    handler: CallbackHandler,
    prefix: str,
) -> str:
    error: str | None = None
    output: Any = None
    try:
        output = _jsonable(await _run_handler(handler, pending.arguments))
        size = len(json.dumps(output, ensure_ascii=False).encode("utf-8"))
        if size > MAX_CALLBACK_RESULT_BYTES - _ENVELOPE_BYTES:
            error = (
                f"the client's result is {size} bytes, over the "
                f"{MAX_CALLBACK_RESULT_BYTES}-byte limit of a callback result"
            )
    except Exception as exc:  # the handler failed: the model hears of it
        logger.warning("callback %s (call %s) failed: %s", pending.tool, pending.call_id, exc)
        error = _error_text(exc)
    try:
        await answer_callback(handle, pending, output=output, error=error, prefix=prefix)
    except CallbackRejected as rejected:
        if rejected.kind in (CALLBACK_ALREADY_ANSWERED, CALLBACK_UNKNOWN, RUN_ENDED):
            return "answered before"  # by us before a restart, or by another client
        if error is not None:
            logger.error("callback %s: the run refused the error: %s", pending.call_id, rejected)
            return f"refused: {rejected.message}"
        # A result the run refuses (breaks the output schema, ...) becomes the tool's
        # error, as a worker tool's bad result would: the model hears why.
        logger.warning("callback %s: result refused: %s", pending.call_id, rejected.message)
        with contextlib.suppress(CallbackRejected):  # answered meanwhile, or gone
            await answer_callback(
                handle, pending, error=f"the result was refused: {rejected.message}", prefix=prefix
            )
        return f"refused: {rejected.message}"
    return "answered" if error is None else f"failed: {error}"


async def serve_callbacks(
    handle: WorkflowHandle[Any, Any],
    handlers: Mapping[str, CallbackHandler],
    *,
    poll_interval: float = 0.5,
    on_answer: OnAnswer | None = None,
    prefix: str = "",
) -> int:
    """Answer the run's callback calls with `handlers` (by tool name) until it ends.

    For an agent loop embedded in a workflow of your own, pass that workflow's handle and
    the loop's handler `prefix`: the calls are served until the host workflow ends.

    A published call of a tool without a handler here is left for another client (it
    times out if none answers). Connection errors and a missing worker are waited out.
    Polls (queries: no history) come every 0.05 s after an answer and back off to
    `poll_interval` seconds while nothing is published.

    Returns:
        How many calls this client answered (or found answered already).

    Raises:
        ValueError: `prefix` is not a handler prefix a loop can have.
    """
    check_handler_prefix(prefix)
    ended = asyncio.ensure_future(handle.result())
    running: dict[str, asyncio.Task[bool]] = {}
    finished: set[str] = set()
    unhandled: set[str] = set()
    interval = _FAST_POLL
    try:
        while not ended.done():
            try:
                published = await pending_callbacks(handle, prefix=prefix)
            except (RPCError, WorkflowQueryFailedError) as err:
                logger.debug("pending_callbacks failed (will retry): %s", err)
                published = []
            for pending in published:
                key = pending.request_hash
                if key in finished or key in running:
                    continue
                handler = handlers.get(pending.tool)
                if handler is None:
                    if pending.tool not in unhandled:
                        unhandled.add(pending.tool)
                        logger.warning("no handler here for callback tool %r", pending.tool)
                    continue
                running[key] = asyncio.create_task(
                    _answer_one(handle, pending, handler, on_answer, prefix)
                )
            answered = len(finished)
            _collect(running, finished)
            # Back off while nothing happens; poll fast again after an answer (the model's
            # next call often follows within a turn) or while a handler runs.
            busy = running or len(finished) > answered
            interval = _FAST_POLL if busy else min(interval * 2, poll_interval)
            await asyncio.wait(
                [ended, *running.values()], timeout=interval, return_when=asyncio.FIRST_COMPLETED
            )
        _collect(running, finished)  # answers that ended the run
    finally:
        for task in running.values():
            task.cancel()
        if not ended.done():
            ended.cancel()
        elif not ended.cancelled():
            ended.exception()  # retrieved: how the run ended is its owner's business
    return len(finished)


def _collect(running: dict[str, asyncio.Task[bool]], finished: set[str]) -> None:
    """Move answered calls from `running` to `finished`; a failed answer (an RPC error)
    is dropped from `running`, so the next poll tries the call again."""
    for key, task in list(running.items()):
        if not task.done():
            continue
        del running[key]
        if not task.cancelled() and task.exception() is None:
            finished.add(key)
        else:
            logger.warning("answering a callback failed (will retry): %s", task.exception())


def handlers_from_module(target: str) -> dict[str, CallbackHandler]:
    """Handlers from `MODULE[:ATTR]`: the dict `ATTR` (tool name -> callable), else the
    dict `callbacks` of the module, else its public functions, by their names.

    Raises:
        ValueError: the module cannot be imported, or holds no handlers.
    """
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import callbacks module {module_name!r}: {error}") from error
    found = getattr(module, attribute or "callbacks", None)
    if attribute and not isinstance(found, Mapping):
        raise ValueError(f"{target} should be a dict of tool name -> callable")
    if isinstance(found, Mapping):
        handlers = {str(k): v for k, v in found.items() if callable(v)}
    else:
        handlers = {
            name: value
            for name, value in vars(module).items()
            if not name.startswith("_")
            and inspect.isfunction(value)
            and value.__module__ == module.__name__
        }
    if not handlers:
        raise ValueError(f"{target} holds no callback handlers (functions named after tools)")
    return handlers
