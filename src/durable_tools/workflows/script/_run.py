"""Code mode in the workflow: one `run_script` call, stepped through the sandbox activity,
with every host call the script makes routed through the call pipeline.

    run_script   parse -> step (type-check, run to the first host calls) -> loop:
                 start each host call as a task (`run_call`: validate, budget, approval,
                 authorization, execute, record) -> wait for one the script awaits ->
                 step again with the answers -> ... -> the script's reply

The workflow never runs the script: it schedules steps and host calls, so replay needs
only history (step results and tool results), never the sandbox. The interpreter state
between steps lives in the artifact store; history holds its digest.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from durable_tools._activities._script_types import (
    PRINTED_TOO_MUCH,
    SCRIPT_STATE_MISSING,
    SCRIPT_STEP_ACTIVITY,
    SLEEP,
    HostAnswer,
    HostCall,
    ScriptLimits,
    ScriptProgress,
    ScriptStep,
)
from durable_tools.messages import Message, ToolCall
from durable_tools.protocol._code_mode import SCRIPT_TOOL, CodeMode
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES, clip, payload_bytes, short_call_id
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import AgentConfig
from durable_tools.tools import ErrorKind, InvalidArguments, ToolSpec
from durable_tools.tools._validation import parse_arguments
from durable_tools.workflows.calls._pipeline import (
    CallRoute,
    claim_call_id,
    key_under,
    run_nested_call,
)
from durable_tools.workflows.calls._record import open_record
from durable_tools.workflows.run._replies import (
    invalid_reply,
    script_failed_reply,
    script_host_error,
    script_invalid_reply,
    script_reply,
)
from durable_tools.workflows.run._run_calls import RunCalls
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.script._stubs import host_specs, host_stubs

__all__ = ["run_script", "script_routes"]

HOST_IDS_CLAIMED_PATCH = "script-host-call-ids-claimed"
"""Marks a run whose host calls take call ids no other call of the run has, counted with
the direct calls' ids (so their keys and decisions are as unique as a direct call's).
Histories recorded before then replay with `<script call>/<n>` ids as they were."""

PER_MESSAGE_CALLS_PATCH = "script-host-calls-per-message"
"""Marks a session run whose host calls count against `max_tool_calls` per message, as
direct calls do. Before, they counted the whole session's calls (after 100 tool calls in
a session every host call was refused); histories recorded then replay as they were."""

UNAWAITED_END_PATCH = "script-unawaited-call-ends-run"
"""Marks runs in which a host call the script never awaited ends the run (its tool raised
`ends_run`, or its denial ends runs): before, the script's answer dropped that end and the run
went on. Asked only when such a call is found."""

_ANSWERS_BUDGET = PAYLOAD_BUDGET_BYTES // 2
"""Most bytes of answers one step takes; more wait for the next step."""

_STEP_SETUP_SECONDS = 20.0
"""A step's time beyond the script's own limit: starting the sandbox, loading its state."""

_ERRORS_BY_STATUS = MappingProxyType({"denied": "PermissionError", "invalid": "TypeError"})
_ERRORS_BY_KIND = MappingProxyType(
    {
        ErrorKind.TIMEOUT.value: "TimeoutError",
        ErrorKind.DENIED.value: "PermissionError",
        ErrorKind.INVALID_ARGUMENTS.value: "TypeError",
        ErrorKind.NOT_FOUND.value: "NameError",
    }
)


async def run_script(state: RunState, call: ToolCall, offered: dict[str, ToolSpec]) -> Message:
    """Answer one `run_script` call: run the script, its host calls through the pipeline."""
    config = state.config.code_mode
    assert config is not None  # the route exists only with code mode on
    record = open_record(state, call)
    script = _script_of(call, config)
    if isinstance(script, InvalidArguments):
        record.status = "invalid"
        record.error_kind = script.kind.value
        record.result = script.message[:300]
        state.event("tool.invalid_args", call, detail=record.result)
        return invalid_reply(call.id, call.name, script)
    record.arguments = clip(script, 160)
    record.started_at = workflow.now()
    state.event("tool.started", call, detail=f"script of {len(script):,} characters")
    return await _ScriptRun(state, call, record, host_specs(offered), config).run(script)


def script_routes(config: AgentConfig) -> dict[str, CallRoute]:
    """The built-in tools this layer answers: `run_script`, when code mode is on."""
    return {SCRIPT_TOOL: run_script} if config.code_mode is not None else {}


def _script_of(call: ToolCall, config: CodeMode) -> str | InvalidArguments:
    try:
        arguments: dict[str, Any] = parse_arguments(call.arguments)
    except InvalidArguments as error:
        return error
    script = arguments.get("script")
    extra = sorted(set(arguments) - {"script"})
    if not isinstance(script, str) or not script.strip() or extra:
        return InvalidArguments(
            "run_script takes one argument, `script`: the Python source as a string",
            errors=["$.script: required, a non-empty string"] + [f"$.{k}: unknown" for k in extra],
        )
    if len(script) > config.max_script_chars:
        return InvalidArguments(
            f"the script has {len(script):,} characters, over max_script_chars "
            f"({config.max_script_chars:,})",
            errors=["$.script: too long; do less in one script"],
        )
    return script


class _ScriptRun:
    """The state of one script while it runs (workflow memory only)."""

    def __init__(
        self,
        state: RunState,
        call: ToolCall,
        record: ToolCallRecord,
        hosts: dict[str, ToolSpec],
        config: CodeMode,
    ) -> None:
        self.state = state
        self.call = call
        self.record = record
        self.hosts = hosts
        self.config = config
        self.limits = ScriptLimits(
            max_step_seconds=config.max_step_seconds,
            max_script_seconds=config.max_script_seconds,
            max_memory_bytes=config.max_memory_bytes,
            max_host_calls=config.max_host_calls,
            max_output_chars=config.max_output_chars,
        )
        self.made = 0
        """Host calls the script made (sleeps and refused calls included)."""
        self.ran = 0
        """Of them, tool calls whose tool started (a refused or denied one never did)."""
        self.printed: list[str] = []
        self.running: dict[int, asyncio.Task[HostAnswer]] = {}
        self.answered: dict[int, HostAnswer] = {}
        self.gate = asyncio.Semaphore(config.max_concurrent_host_calls)

    async def run(self, script: str) -> Message:
        first = ScriptStep(
            now=workflow.now(),
            limits=self.limits,
            script=script,
            stubs=host_stubs(self.hosts),
            seed=workflow.random().getrandbits(62),
            calls_left=self.config.max_host_calls,
        )
        try:
            progress = await self._step(first)
            while True:
                self._start_calls(progress)
                if progress.status != "waiting":
                    break
                answers = await self._answers_for(progress.awaiting)
                progress = await self._step(
                    ScriptStep(
                        now=workflow.now(),
                        limits=self.limits,
                        state=progress.state,
                        answers=answers,
                        calls_left=self.config.max_host_calls - self.made,
                    )
                )
        except _StepFailed as failed:
            await self._settle_running()
            return self._failed(str(failed))
        except EndRun as end:  # a host call ended the run (its tool, or a denial's policy)
            raise self._ended(end) from None
        # Calls the script started but never awaited still run to their end (each is a
        # real call, recorded in the timeline); the script's answer waits for them.
        await self._settle_running()
        if progress.status == "invalid":
            return self._invalid(progress.error or "the script does not check")
        if progress.status == "failed":
            return self._failed(progress.error or "the script failed")
        return self._done(progress.result)

    async def _step(self, step: ScriptStep) -> ScriptProgress:
        try:
            progress: ScriptProgress = await workflow.execute_activity(
                SCRIPT_STEP_ACTIVITY,
                step,
                result_type=ScriptProgress,
                start_to_close_timeout=timedelta(
                    seconds=self.config.max_step_seconds + _STEP_SETUP_SECONDS
                ),
                retry_policy=RetryPolicy(maximum_attempts=5),
                summary=f"{self.call.name} {self.call.id[:64]}: step",
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == SCRIPT_STATE_MISSING:
                raise _StepFailed(f"the script's state was lost: {cause.message}") from None
            why = cause.message if isinstance(cause, ApplicationError) else str(error)
            raise _StepFailed(f"the sandbox could not run the script: {why}") from None
        self.printed.append(progress.output)
        return progress

    def _start_calls(self, progress: ScriptProgress) -> None:
        for host in progress.calls:
            self.made += 1
            self.running[host.call_id] = asyncio.create_task(self._host_call(host, self.made))

    async def _answers_for(self, awaiting: list[int]) -> list[HostAnswer]:
        """Wait until a call the script awaits is answered; the answers it may take now."""
        known = [i for i in awaiting if i in self.running or i in self.answered]
        if len(known) != len(awaiting):  # the sandbox waits for a call it never made
            raise _StepFailed(f"the script waits for unknown host calls {awaiting}")
        if not any(i in self.answered for i in awaiting):
            tasks = [self.running[i] for i in awaiting if i in self.running]
            await workflow.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for call_id in [i for i in awaiting if i in self.running]:
            if self.running[call_id].done():
                self.answered[call_id] = self.running.pop(call_id).result()
        answers: list[HostAnswer] = []
        size = 0
        for call_id in awaiting:
            answer = self.answered.get(call_id)
            if answer is None:
                continue
            cost = payload_bytes(answer)
            if cost > _ANSWERS_BUDGET:
                answer = HostAnswer(
                    call_id=call_id,
                    error_type="RuntimeError",
                    error=f"the result is {cost:,} bytes, too large to hand to a script",
                )
                cost = payload_bytes(answer)
            if answers and size + cost > _ANSWERS_BUDGET:
                break  # the rest go with the next step
            del self.answered[call_id]
            answers.append(answer)
            size += cost
        return answers

    async def _host_call(self, host: HostCall, n: int) -> HostAnswer:
        async with self.gate:
            if host.function == SLEEP:
                seconds = min(
                    float(host.arguments.get("seconds", 0.0)), self.config.max_sleep_seconds
                )
                if seconds > 0:
                    await workflow.sleep(seconds)
                return HostAnswer(call_id=host.call_id)
            if host.problem is not None:
                why = script_host_error(host.function, host.problem)
                return HostAnswer(call_id=host.call_id, error_type="TypeError", error=why)
            return await self._tool_call(host, n)

    async def _tool_call(self, host: HostCall, n: int) -> HostAnswer:
        state = self.state
        spec = self.hosts.get(host.function)
        if spec is None:
            why = script_host_error(host.function, "no such host function")
            return HostAnswer(call_id=host.call_id, error_type="NameError", error=why)
        limit = state.config.limits.max_tool_calls
        if _over_call_limit(state, limit):
            why = script_host_error(host.function, f"max_tool_calls ({limit}) reached")
            return HostAnswer(call_id=host.call_id, error_type="RuntimeError", error=why)
        state.tool_calls += 1
        if workflow.patched(HOST_IDS_CLAIMED_PATCH):
            call_id = _unused_call_id(state.calls, f"{self.call.id}/{n}")
            claim_call_id(state, call_id)
        else:
            call_id = short_call_id(f"{self.call.id}/{n}")
            key_under(state.calls, call_id, self.call.id, n)
        tool_call = ToolCall(
            id=call_id,
            name=host.function,
            arguments=json.dumps(host.arguments, ensure_ascii=False),
        )
        message = await run_nested_call(state, tool_call, self.hosts, parent=self.call.id)
        record = state.calls.records.get(call_id)
        if record is not None and record.started_at is not None:
            self.ran += 1
        return _answer(host.call_id, spec, record, message)

    async def _settle_running(self) -> None:
        """Wait for the host calls still running; raise the `EndRun` of one that ended the
        run, even though the script never awaited it (runs recorded before
        `UNAWAITED_END_PATCH` went on)."""
        if self.running:
            ended = await asyncio.gather(*self.running.values(), return_exceptions=True)
            self.running.clear()
            for end in ended:
                if isinstance(end, EndRun) and workflow.patched(UNAWAITED_END_PATCH):
                    raise self._ended(end)

    def _output(self) -> str:
        return clip("".join(self.printed).strip(), self.config.max_output_chars)

    def _done(self, result: str | None) -> Message:
        shown = clip(result or "null", self.config.max_output_chars)
        self._close("completed", shown, None)
        self.state.event("tool.completed", self.call, detail=clip(shown, 300))
        return script_reply(self.call.id, self.call.name, self._output(), shown, self.made)

    def _failed(self, error: str) -> Message:
        self._close("failed", error, ErrorKind.EXECUTION.value)
        self.state.event(
            "tool.failed", self.call, detail=clip(error, 300), error_kind=ErrorKind.EXECUTION.value
        )
        return script_failed_reply(
            self.call.id,
            self.call.name,
            clip(error, 8_000),
            self._output(),
            self.made,
            self.ran,
            _bound_hit(error, self.config),
        )

    def _invalid(self, problems: str) -> Message:
        self._close("invalid", problems, ErrorKind.INVALID_ARGUMENTS.value)
        self.state.event("tool.invalid_args", self.call, detail=clip(problems, 300))
        return script_invalid_reply(self.call.id, self.call.name, clip(problems, 8_000))

    def _ended(self, end: EndRun) -> EndRun:
        """Close the script's call as failed by the end of the run a host call brought."""
        self._close("failed", end.reason, ErrorKind.EXECUTION.value)
        return end

    def _close(self, status: Any, result: str, error_kind: str | None) -> None:
        self.record.status = status
        self.record.result = clip(result, 300)
        self.record.error_kind = error_kind
        self.record.finished_at = workflow.now()
        self.record.attempts = 1


def _bound_hit(error: str, config: CodeMode) -> str | None:
    """Which of code mode's bounds the sandbox's error reports, in the config's words."""
    if "feed time limit exceeded" in error:
        return (
            f"the script's limit: max_script_seconds ({config.max_script_seconds:g} s of "
            "computing in all)"
        )
    if "time limit exceeded" in error or "ran past its time limit" in error:
        return (
            f"the per-step limit: max_step_seconds ({config.max_step_seconds:g} s of "
            "computing between two host calls)"
        )
    if error.startswith(PRINTED_TOO_MUCH):
        return (
            f"the output limit: max_output_chars ({config.max_output_chars:,} characters "
            "shown; a step may print at most 4 bytes per character of it)"
        )
    if "memory limit exceeded" in error:
        return f"the memory limit: max_memory_bytes ({config.max_memory_bytes:,})"
    if "max_host_calls" in error:
        return f"the host call limit: max_host_calls ({config.max_host_calls})"
    if "suspension limit" in error:
        return (
            f"the sandbox's round-trip limit: {4 * config.max_host_calls + 200} host calls, "
            "clock reads and sleeps in one step (4 x max_host_calls + 200)"
        )
    return None


def _over_call_limit(state: RunState, limit: int) -> bool:
    """Whether the run's `max_tool_calls` refuses one more call: counted per message in a
    session (from `tool_calls_base`), as the loop counts direct calls."""
    if state.tool_calls < limit:
        return False
    if state.tool_calls - state.tool_calls_base >= limit:
        return True
    # Only a session's later messages get here: the patch is asked (and marked) then only.
    return not workflow.patched(PER_MESSAGE_CALLS_PATCH)


def _unused_call_id(calls: RunCalls, wanted: str) -> str:
    """`wanted` as a call id, or `wanted~<k>` when a call of this run already has it.

    The model names its calls: a direct call named `s1/1` (or a script id used again) must
    not lend a host call its record, its pending approval or its decision.
    """
    call_id = short_call_id(wanted)
    attempt = 0
    while call_id in calls.uses or call_id in calls.records:
        attempt += 1
        call_id = short_call_id(f"{wanted}~{attempt}")
    return call_id


class _StepFailed(Exception):
    """A step could not run (sandbox missing, state lost): the script ends with this."""


def _answer(
    call_id: int, spec: ToolSpec, record: ToolCallRecord | None, message: Message
) -> HostAnswer:
    """What the script gets for a host call: the tool's value, or the exception to raise
    (its message is what the model would have read for the same direct call)."""
    text = message.content or ""
    status = record.status if record is not None else "failed"
    if status == "completed" and not message.is_error:
        return HostAnswer(call_id=call_id, value=_value(spec, record, text))
    kind = (record.error_kind if record is not None else None) or ""
    error_type = _ERRORS_BY_STATUS.get(status) or _ERRORS_BY_KIND.get(kind, "RuntimeError")
    return HostAnswer(call_id=call_id, error_type=error_type, error=clip(text, 4_000))


def _value(spec: ToolSpec, record: ToolCallRecord | None, text: str) -> Any:
    if isinstance(spec.output_schema, dict) and spec.output_schema.get("type") == "string":
        return text
    if record is not None and record.details is not None:
        return record.details
    try:
        return json.loads(text)
    except ValueError:
        return text
