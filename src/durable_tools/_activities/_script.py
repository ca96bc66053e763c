"""The script-stepping activity of code mode: runs a script in the Monty sandbox until it
waits for host calls or ends.

The sandbox (`pydantic-monty`, the `code` extra) runs scripts in worker subprocesses, so
it cannot run inside workflow code; each step is one short activity. The interpreter's
state between steps goes to the artifact store (content-addressed: the digest recorded in
history is checked on every read, so the state a step resumes is the one its previous
step stored). What the script sees of the world comes from the step's input: the clock is
the workflow's time for the step, `random` is seeded by the workflow, and sleeps and tool
calls come back to the workflow as host calls. A retried step (its worker died) therefore
computes the same thing again.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import re
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._script_types import (
    SCRIPT_STATE_MISSING,
    SCRIPT_STEP_ACTIVITY,
    SLEEP,
    HostAnswer,
    HostCall,
    ScriptProgress,
    ScriptStep,
    output_cap_bytes,
    printed_too_much,
)
from durable_tools._extras import install_hint
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES, clip
from durable_tools.tools._artifacts import ArtifactStore, fetch_artifact
from durable_tools.tools._results import ArtifactRef

__all__ = ["script_activity"]

SCRIPT_MEDIA_TYPE = "application/x-monty-snapshot"

_CALLS_BUDGET = PAYLOAD_BUDGET_BYTES // 2
"""Most bytes the host calls of one step may carry (their arguments are in history)."""

_SANDBOX_GRACE_SECONDS = 5.0
"""How long past a step's execution limit the pool waits before killing its worker."""


def script_activity(runtime: ToolRuntime) -> Callable[..., Any]:
    """The step activity, storing script state in the worker's artifact store."""
    store = runtime.artifact_store

    @activity.defn(name=SCRIPT_STEP_ACTIVITY)
    async def script_step(step: ScriptStep) -> ScriptProgress:
        try:
            import pydantic_monty as monty
        except ImportError:  # pragma: no cover - depends on the installed extras
            raise ApplicationError(
                f"code mode needs the sandbox on the worker: {install_hint('code')}",
                type="CodeModeUnavailable",
                non_retryable=True,
            ) from None
        return await _Step(monty, store, step).run()

    return script_step


class _Step:
    """One step: start the script, or restore it and hand it its answers; then drive it."""

    def __init__(self, monty: Any, store: ArtifactStore, step: ScriptStep) -> None:
        self.monty = monty
        self.store = store
        self.step = step
        self.calls: list[HostCall] = []
        self.output = monty.CollectString(max_bytes=output_cap_bytes(step.limits))

    async def run(self) -> ScriptProgress:
        monty, limits = self.monty, self.step.limits
        pool = monty.AsyncMonty(
            min_processes=1,
            max_processes=1,
            request_timeout=min(limits.max_step_seconds, limits.max_script_seconds)
            + 2 * _SANDBOX_GRACE_SECONDS,
            feed_duration_limit_grace=_SANDBOX_GRACE_SECONDS,
            turn_duration_limit_grace=_SANDBOX_GRACE_SECONDS,
        )
        async with pool:
            session = pool.checkout(
                limits={
                    "max_turn_duration_secs": limits.max_step_seconds,
                    # Monty keeps the feed's clock in the stored state: this bounds the
                    # script's computing over all its steps.
                    "max_feed_duration_secs": limits.max_script_seconds,
                    "max_memory": limits.max_memory_bytes,
                    # Each host call costs a suspension to make and one to settle; clock
                    # reads cost one each. The workflow counts host calls exactly.
                    "max_suspensions": 4 * limits.max_host_calls + 200,
                },
                type_check=self.step.stubs is not None,
                type_check_stubs=self.step.stubs,
                type_check_format="concise",
                os_policy={
                    "datetime": "call_host",
                    "sleep": "call_host",
                    "random_start": {"seed": self.step.seed},
                },
            )
            async with session:
                try:
                    snapshot = await self._begin(session)
                    return await self._drive(snapshot)
                except (monty.MontyTypingError, monty.MontySyntaxError) as error:
                    return self._ended("invalid", error=clip(error.display(), 8_000))
                except monty.MontyRuntimeError as error:
                    return self._ended("failed", error=self._runtime_error(error.display()))
                except monty.MontyCrashedError as error:
                    why = (
                        "it ran past its time limit and was killed"
                        if error.timed_out
                        else f"the sandbox stopped ({error})"
                    )
                    return self._ended("failed", error=f"the script was stopped: {why}")

    def _runtime_error(self, shown: str) -> str:
        """The error of a script that raised, or that the sandbox stopped at a bound.

        The sandbox stops a script that prints past the print collector's cap with the
        same `MemoryError` as one over `max_memory_bytes`; only the cap it names tells
        them apart (the two never have the same value: `output_cap_bytes`).
        """
        cap = output_cap_bytes(self.step.limits)
        if re.search(rf"MemoryError: memory limit exceeded: \d+ bytes > {cap} bytes", shown):
            return printed_too_much(self.step.limits)
        return clip(shown, 8_000)

    async def _begin(self, session: Any) -> Any:
        step = self.step
        if step.state is None:
            return await session.feed_start(step.script or "", print_callback=self.output)
        try:
            blob = await fetch_artifact(step.state, self.store)
        except KeyError:
            raise ApplicationError(
                f"the script's state {step.state.sha256[:12]} is not in this worker's "
                "artifact store (or does not match its digest)",
                type=SCRIPT_STATE_MISSING,
                non_retryable=True,
            ) from None
        snapshot = await session.load_snapshot(blob, print_callback=self.output)
        answers = {a.call_id: _settled(a) for a in step.answers}
        if isinstance(snapshot, self.monty.AsyncFunctionSnapshot):  # a blocking sleep
            return await snapshot.resume(answers.get(snapshot.call_id, {"return_value": None}))
        waiting = set(snapshot.pending_call_ids)
        return await snapshot.resume({i: a for i, a in answers.items() if i in waiting})

    async def _drive(self, snapshot: Any) -> ScriptProgress:
        monty = self.monty
        while True:
            if isinstance(snapshot, monty.MontyComplete):
                result = _result_text(snapshot.output, self.step.limits.max_output_chars)
                return self._ended("done", result=result)
            if isinstance(snapshot, monty.AsyncFutureSnapshot):
                return await self._suspend(snapshot, list(snapshot.pending_call_ids))
            if isinstance(snapshot, monty.AsyncNameLookupSnapshot):
                snapshot = await snapshot.resume()  # an unknown name: NameError
                continue
            if snapshot.is_os_function:
                answer = self._os_call(snapshot)
                if answer is None:  # a blocking sleep: only the workflow can answer it
                    return await self._suspend(snapshot, [snapshot.call_id])
                snapshot = await (
                    snapshot.resume_not_handled()
                    if answer is _UNHANDLED
                    else snapshot.resume(answer)
                )
                continue
            snapshot = await snapshot.resume(self._host_call(snapshot))

    def _host_call(self, snapshot: Any) -> dict[str, Any]:
        """Record a tool call; the script gets a future the workflow settles later."""
        name = str(snapshot.function_name)
        if len(self.calls) >= self.step.calls_left:
            return _raise("RuntimeError", self._over_quota(name))
        problem = None
        arguments: dict[str, Any] = {}
        if snapshot.args:
            problem = "host functions take keyword arguments only, e.g. f(name=value)"
        elif _depth(snapshot.kwargs) > _MAX_DEPTH:
            problem = f"arguments nest deeper than {_MAX_DEPTH} levels"
        else:
            try:
                arguments = json.loads(json.dumps(dict(snapshot.kwargs), allow_nan=False))
            except (TypeError, ValueError) as error:
                problem = (
                    f"arguments must be JSON values (str, int, float, bool, None, "
                    f"list, dict): {error}"
                )
        self.calls.append(
            HostCall(call_id=snapshot.call_id, function=name, arguments=arguments, problem=problem)
        )
        return {"future": ...}

    def _over_quota(self, name: str) -> str:
        return (
            f"{name}(): the script made more than {self.step.limits.max_host_calls} host "
            "calls (max_host_calls; sleeps count)"
        )

    def _os_call(self, snapshot: Any) -> Any:
        """Answer the clock from the step's time; sleeps become host calls."""
        name = str(snapshot.function_name)
        now = self.step.now
        if name in ("asyncio.sleep", "time.sleep"):
            if len(self.calls) >= self.step.calls_left:
                # A sleep is a host call (a step and a timer): a script sleeping in a loop
                # would otherwise grow the run's history until Temporal ended the run.
                return _raise("RuntimeError", self._over_quota(name))
            seconds = snapshot.args[0] if snapshot.args else 0
            self.calls.append(
                HostCall(
                    call_id=snapshot.call_id,
                    function=SLEEP,
                    arguments={"seconds": float(seconds) if _finite(seconds) else 0.0},
                    blocking=name == "time.sleep",
                )
            )
            return None if name == "time.sleep" else {"future": ...}
        if name == "datetime.now":
            tz = snapshot.args[0] if snapshot.args else None
            if isinstance(tz, _dt.tzinfo):
                return {"return_value": now.astimezone(tz)}
            return {"return_value": now.astimezone(_dt.UTC).replace(tzinfo=None)}
        if name == "date.today":
            return {"return_value": now.astimezone(_dt.UTC).date()}
        if name == "time.time":
            return {"return_value": now.timestamp()}
        return _UNHANDLED  # files, environment, entropy: refused by the sandbox

    async def _suspend(self, snapshot: Any, awaiting: list[int]) -> ScriptProgress:
        size = sum(len(json.dumps(c.arguments)) for c in self.calls)
        if size > _CALLS_BUDGET:
            self.calls = []  # none of them is made: their arguments stay out of history
            return self._ended(
                "failed",
                error=f"the host calls made in one step carry {size:,} bytes of arguments, "
                f"over {_CALLS_BUDGET:,}: pass large data by reference",
            )
        blob = snapshot.dump()
        try:
            ref: ArtifactRef = await asyncio.to_thread(self.store.put, blob, SCRIPT_MEDIA_TYPE)
        except Exception as error:  # the store is down: retry the step
            raise ApplicationError(
                f"cannot store the script's state: {type(error).__name__}: {error}",
                type="ScriptStateUnavailable",
            ) from None
        return ScriptProgress(
            status="waiting",
            calls=self.calls,
            awaiting=awaiting,
            state=ref,
            output=self._printed(),
        )

    def _ended(
        self, status: Any, *, result: Any = None, error: str | None = None
    ) -> ScriptProgress:
        return ScriptProgress(
            status=status, calls=self.calls, output=self._printed(), result=result, error=error
        )

    def _printed(self) -> str:
        return clip(str(self.output.output), self.step.limits.max_output_chars)


_UNHANDLED = object()


def _settled(answer: HostAnswer) -> dict[str, Any]:
    if answer.error_type is not None:
        return _raise(answer.error_type, answer.error or "")
    return {"return_value": answer.value}


def _raise(kind: str, message: str) -> dict[str, Any]:
    return {"exc_type": kind, "message": message}


def _finite(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and value == value
        and abs(value) != float("inf")
    )


def _result_text(value: Any, limit: int) -> str:
    """The script's final value as JSON text (its repr when it is not JSON), bounded."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value) if _depth(value) <= _MAX_DEPTH else "<a value nested too deep to show>"
    return clip(text, limit)


_MAX_DEPTH = 64
"""Deepest nesting of a host call's arguments (pydantic refuses about 255 levels)."""


def _depth(value: Any, limit: int = _MAX_DEPTH) -> int:
    """How deep `value` nests lists and dicts, counting no further than `limit + 1`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > limit:
            break
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, level + 1) for v in item)
    return deepest
