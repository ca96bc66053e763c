"""The agent loop as a Temporal workflow.

Model call -> validate tool calls -> (approval, authorization) -> run tools -> feed results
back, until the model answers without tool calls or a limit is hit. Everything here is
deterministic: tools, models and token stores are reached only through activities, and
the tools a run may use come from the catalog activity, recorded in history at start.
"""

# No `from __future__ import annotations` here: the sandbox re-imports this module for
# every run, and string annotations would be evaluated (compiled) for each handler anew.

import asyncio
import builtins
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
    TimeoutError,
)

with workflow.unsafe.imports_passed_through():
    from durable_tools import search_attributes as sa
    from durable_tools.activities._types import (
        CATALOG_ACTIVITY,
        MODEL_ACTIVITY,
        PREFLIGHT_ACTIVITY,
        SNAPSHOT_MISSING,
        CatalogRequest,
        ModelCall,
        ModelTurn,
        PreflightRequest,
        PreflightResult,
        ToolInvocation,
    )
    from durable_tools.messages import (
        Message,
        ModelRequest,
        ModelResponse,
        ToolCall,
        ToolDefinition,
    )
    from durable_tools.tools import (
        ArtifactRef,
        Cancelled,
        Denied,
        ErrorKind,
        InvalidArguments,
        LoadingMode,
        NeedsAuthorization,
        ToolExecutionError,
        ToolNotFound,
        ToolOutcome,
        ToolSpec,
        ToolTimeout,
    )
    from durable_tools.tools._classify import error_message_for_model
    from durable_tools.tools._formatting import (
        abridge_arguments,
        error_outcome,
        redact_arguments,
    )
    from durable_tools.tools._validation import parse_arguments, validate_arguments
    from durable_tools.workflows._approvals import (
        InvalidDecision,
        arguments_hash,
        check_decision,
        static_approval,
    )
    from durable_tools.workflows._options import (
        ToolActivityOptions,
        activity_options_for,
        retry_delay,
    )
    from durable_tools.workflows._tool_search import SEARCH_TOOL, search_definition, search_specs
    from durable_tools.workflows._types import (
        AgentConfig,
        AgentInput,
        AgentResult,
        ApprovalDecision,
        AuthorizationCompleted,
        CarriedState,
        PendingApproval,
        PendingAuthorization,
        RunEvent,
        RunSnapshot,
        RunStatus,
        ToolCallRecord,
    )

__all__ = ["AgentWorkflow"]

# Kept across continue-as-new; older entries stay readable in the earlier runs' histories.
_CARRY_LIMIT = 500

# Above this, continue-as-new carries the conversation by snapshot reference only.
_CARRY_CONVERSATION_BYTES = 256_000

_FINAL = frozenset(
    {RunStatus.COMPLETED, RunStatus.LIMIT_REACHED, RunStatus.FAILED, RunStatus.CANCELLED}
)


class _EndRun(Exception):
    """Raised inside the loop to end the run with a status (limit, policy, cancel)."""

    def __init__(self, status: RunStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@workflow.defn(name="AgentWorkflow")
class AgentWorkflow:
    """A durable agent run. Start it with an `AgentInput`; it returns an `AgentResult`."""

    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        carried = input.carried
        self._input = input
        self._config = input.config
        self._conversation: list[Message] = list(carried.conversation) if carried else []
        self._catalog: list[ToolSpec] = list(carried.catalog) if carried else []
        self._turn = carried.turn if carried else 0
        self._tool_calls = carried.tool_calls if carried else 0
        self._timeline: list[ToolCallRecord] = list(carried.timeline) if carried else []
        self._events: list[RunEvent] = list(carried.events) if carried else []
        self._steer: list[str] = list(carried.pending_steer) if carried else []
        self._discovered: list[str] = list(carried.discovered) if carried else []
        self._continued = carried.continued if carried else 0
        self._offset = carried.conversation_offset if carried else 0
        self._depth = input.depth
        self._max_depth = (
            input.max_depth if input.max_depth is not None else self._config.max_subagent_depth
        )
        self._snapshot: ArtifactRef | None = carried.snapshot if carried else None
        self._snapshot_length = carried.snapshot_length if carried else 0
        # Tool definitions are stored once per advertised set; calls then send a reference.
        self._definitions: tuple[tuple[str, ...], list[ToolDefinition]] | None = None
        self._tools_ref: ArtifactRef | None = None
        self._options: dict[str, ToolActivityOptions] = {}
        # How often each call id was used: a model that reuses ids across turns must not
        # give two different calls one idempotency key (or one approval).
        self._call_uses: dict[str, int] = dict(carried.call_uses) if carried else {}
        self._keys: dict[str, str] = {}
        self._status = RunStatus.RUNNING
        self._final_answer: str | None = None
        self._reason: str | None = None
        self._cancel_reason: str | None = None
        self._pending: dict[str, PendingApproval] = {}
        self._decisions: dict[str, ApprovalDecision] = {}
        self._authorizations: dict[str, PendingAuthorization] = {}
        self._grants: dict[str, AuthorizationCompleted] = {}
        self._running: dict[str, asyncio.Task[Message]] = {}
        self._published: tuple[str, int, str] | None = None

    # ----------------------------------------------------------------- the loop

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        if input.carried is None:
            self._catalog = await workflow.execute_activity(
                CATALOG_ACTIVITY,
                CatalogRequest(
                    identity=input.identity,
                    granted_scopes=input.granted_scopes,
                    tools=self._config.tools,
                ),
                result_type=list[ToolSpec],
                start_to_close_timeout=timedelta(seconds=30),
                summary="load the tool catalog",
            )
            if self._config.instructions:
                self._conversation.append(Message.system(self._config.instructions))
            self._conversation.append(Message.user(input.prompt))
            self._event("run.started", detail=f"{len(self._catalog)} tools advertised")
        else:
            self._event("run.continued", detail=f"continued-as-new #{self._continued}")
        try:
            return await self._loop()
        except _EndRun as end:
            return self._finish(end.status, reason=end.reason)
        except asyncio.CancelledError:
            # The run was cancelled through Temporal itself: record it, then let the engine
            # mark the execution cancelled.
            self._cancel_running("run cancelled")
            self._finish(RunStatus.CANCELLED, reason="run cancelled")
            raise
        except FailureError as failure:  # fails the execution; say so in AgentStatus first
            self._finish(RunStatus.FAILED, reason=failure.message)
            raise

    async def _loop(self) -> AgentResult:
        limits = self._config.limits
        while True:
            self._check_cancelled()
            if self._turn >= limits.max_turns:
                raise _EndRun(RunStatus.LIMIT_REACHED, f"max_turns ({limits.max_turns}) reached")
            while self._steer:
                self._conversation.append(Message.user(self._steer.pop(0)))
            self._publish(f"Calling the model (turn {self._turn + 1}).")
            response = await self._call_model()
            self._turn += 1
            message = response.message
            self._conversation.append(message)
            if not message.tool_calls:
                self._final_answer = message.content or ""
                return self._finish(RunStatus.COMPLETED)
            calls = message.tool_calls
            if len(calls) > limits.max_tool_calls_per_turn:
                raise _EndRun(
                    RunStatus.LIMIT_REACHED,
                    f"the model asked for {len(calls)} tool calls in one turn; "
                    f"max_tool_calls_per_turn is {limits.max_tool_calls_per_turn}",
                )
            if self._tool_calls + len(calls) > limits.max_tool_calls:
                raise _EndRun(
                    RunStatus.LIMIT_REACHED, f"max_tool_calls ({limits.max_tool_calls}) reached"
                )
            self._tool_calls += len(calls)
            self._conversation.extend(await self._run_calls(calls))
            self._check_cancelled()
            await self._maybe_continue_as_new()

    async def _call_model(self) -> ModelResponse:
        # Only what is new since the last snapshot crosses into history: the activity
        # rebuilds the rest from the artifact store.
        new = self._conversation[self._snapshot_length - self._offset :]
        try:
            turn = await self._model_activity(
                new, self._snapshot, self._snapshot_length, self._tools_ref
            )
        except ActivityError as err:
            cause = err.cause
            if not (
                isinstance(cause, ApplicationError)
                and cause.type == SNAPSHOT_MISSING
                and self._offset == 0
            ):
                raise self._model_failure(err) from err
            # This worker cannot see the snapshot (a store not shared between machines):
            # send the conversation in full once, which starts a new chain.
            self._event("model.snapshot_missing", detail=cause.message[:200])
            try:
                turn = await self._model_activity(self._conversation, None, 0, None)
            except ActivityError as again:
                raise self._model_failure(again) from again
        self._snapshot = turn.snapshot
        self._snapshot_length = turn.snapshot_length
        if turn.tools_ref is not None:
            self._tools_ref = turn.tools_ref
        return turn.response

    async def _model_activity(
        self,
        messages: list[Message],
        base: ArtifactRef | None,
        base_length: int,
        tools_ref: ArtifactRef | None,
    ) -> ModelTurn:
        request = ModelRequest(
            model=self._config.model,
            messages=messages,
            tools=[] if tools_ref is not None else self._tool_definitions(),
            turn=self._turn,
            run_id=workflow.info().workflow_id,
        )
        turn: ModelTurn = await workflow.execute_activity(
            MODEL_ACTIVITY,
            ModelCall(request=request, base=base, base_length=base_length, tools_ref=tools_ref),
            result_type=ModelTurn,
            start_to_close_timeout=timedelta(seconds=self._config.model_timeout_seconds),
            retry_policy=RetryPolicy(maximum_attempts=self._config.model_max_attempts),
            summary=(
                f"model {self._config.model} turn {self._turn + 1}"
                if self._config.activity_summaries
                else None
            ),
        )
        return turn

    @staticmethod
    def _model_failure(err: ActivityError) -> ApplicationError:
        cause = err.cause
        detail = cause.message if isinstance(cause, ApplicationError) else str(cause or err)
        return ApplicationError(
            f"model call failed: {detail}", type="ModelError", non_retryable=True
        )

    def _advertised(self) -> dict[str, ToolSpec]:
        return {
            spec.name: spec
            for spec in self._catalog
            if (spec.loading == LoadingMode.ALWAYS or spec.name in self._discovered)
            and (spec.subagent is None or self._depth < self._max_depth)
        }

    def _has_deferred(self) -> bool:
        return any(spec.loading == LoadingMode.DEFERRED for spec in self._catalog)

    def _tool_definitions(self) -> list[ToolDefinition]:
        advertised = self._advertised()
        key = tuple(advertised)
        if self._definitions is None or self._definitions[0] != key:
            definitions = [
                ToolDefinition(
                    name=spec.name,
                    description=spec.description,
                    parameters=spec.input_schema,
                    strict=spec.strict,
                )
                for spec in advertised.values()
            ]
            if self._has_deferred():
                definitions.append(search_definition())
            self._definitions = (key, definitions)
        return self._definitions[1]

    # ------------------------------------------------------------- tool calls

    async def _run_calls(self, calls: list[ToolCall]) -> list[Message]:
        strategy = self._config.strategy
        # The advertised set is fixed for the whole turn: a tool found by search in this
        # turn becomes callable from the next one.
        advertised = self._advertised()
        if strategy.mode == "sequential":
            width, batch = 1, len(calls)
        elif strategy.mode == "parallel":
            width, batch = strategy.concurrency, len(calls)
        else:
            width, batch = strategy.batch_size, strategy.batch_size
        gate = asyncio.Semaphore(width)
        duplicates = self._assign_keys(calls)
        results: list[Message] = []
        for start in range(0, len(calls), max(batch, 1)):
            group = calls[start : start + batch]
            if self._cancel_reason is not None:
                results.extend(self._cancelled_message(call) for call in group)
                continue
            tasks = [
                asyncio.create_task(
                    self._duplicate(call)
                    if start + i in duplicates
                    else self._bounded(gate, call, advertised)
                )
                for i, call in enumerate(group)
            ]
            for i, (call, task) in enumerate(zip(group, tasks, strict=True)):
                if start + i not in duplicates:
                    self._running[call.id] = task
            try:
                results.extend(await asyncio.gather(*tasks))
            finally:
                for call in group:
                    self._running.pop(call.id, None)
        return results

    def _assign_keys(self, calls: list[ToolCall]) -> set[int]:
        """Give each call its idempotency key; return the indexes of in-turn duplicates.

        The key is `<workflow id>/<call id>`; a call id the model already used in an
        earlier turn gets `#<n>` appended, so two different calls never share a key.
        """
        workflow_id = workflow.info().workflow_id
        seen: set[str] = set()
        duplicates: set[int] = set()
        for index, call in enumerate(calls):
            if call.id in seen:
                duplicates.add(index)
                continue
            seen.add(call.id)
            uses = self._call_uses.get(call.id, 0)
            self._call_uses[call.id] = uses + 1
            self._keys[call.id] = f"{workflow_id}/{call.id}" + (f"#{uses}" if uses else "")
        return duplicates

    async def _duplicate(self, call: ToolCall) -> Message:
        error = InvalidArguments(
            f"call id {call.id!r} is used by another call of the same turn",
            errors=[
                f"$: call id {call.id!r} is not unique in this turn; give each call its own id"
            ],
        )
        self._event("tool.invalid_args", call, detail=error.message)
        return Message.tool(call.id, call.name, error_message_for_model(call.id, call.name, error))

    async def _bounded(
        self, gate: asyncio.Semaphore, call: ToolCall, advertised: dict[str, ToolSpec]
    ) -> Message:
        try:
            async with gate:
                self._check_call_cancelled()
                return await self._run_call(call, advertised)
        except asyncio.CancelledError:
            if self._cancel_reason is None:
                raise  # the whole run is being cancelled through Temporal
            return self._cancelled_message(call)

    def _cancelled_message(self, call: ToolCall) -> Message:
        for record in self._timeline:
            if record.call_id == call.id and record.status in ("running", "awaiting_approval"):
                record.status = "cancelled"
        cancelled = Cancelled(self._cancel_reason or "the run was cancelled")
        return Message.tool(
            call.id, call.name, error_message_for_model(call.id, call.name, cancelled)
        )

    def _check_call_cancelled(self) -> None:
        if self._cancel_reason is not None:
            raise asyncio.CancelledError(self._cancel_reason)

    async def _run_call(self, call: ToolCall, advertised: dict[str, ToolSpec]) -> Message:
        record = ToolCallRecord(
            call_id=call.id,
            tool=call.name,
            turn=self._turn,
            arguments=call.arguments[:160],
            status="running",
        )
        self._timeline.append(record)
        if call.name == SEARCH_TOOL and self._has_deferred():
            return self._search_tools(call, record)
        spec = advertised.get(call.name)
        try:
            if spec is None:
                raise ToolNotFound(f"unknown tool {call.name!r}")
            arguments = parse_arguments(call.arguments)
            arguments = validate_arguments(spec, arguments)
        except (InvalidArguments, ToolNotFound) as error:
            record.status = "invalid"
            record.error_kind = error.kind.value
            record.result = error.message[:300]
            self._event("tool.invalid_args", call, detail=error.message[:300])
            message = error_message_for_model(
                call.id, call.name, error, available=sorted(advertised)
            )
            return Message.tool(call.id, call.name, message)
        record.arguments = abridge_arguments(redact_arguments(arguments, spec.safety.redact))
        try:
            return await self._approve_and_execute(call, spec, arguments, record)
        except ActivityError as err:  # the preflight failed (OAuth not configured, ...)
            cause = err.cause
            why = cause.message if isinstance(cause, FailureError) else str(err)
            failure = ToolExecutionError(f"the call could not be prepared: {why}")
            outcome = error_outcome(call.id, spec.name, failure)
            return Message.tool(
                call.id, spec.name, self._record_outcome(call, record, outcome, 0).content
            )

    async def _approve_and_execute(
        self,
        call: ToolCall,
        spec: ToolSpec,
        arguments: dict[str, Any],
        record: ToolCallRecord,
    ) -> Message:
        needs_approval = static_approval(spec, self._config.approval)
        preflight: PreflightResult | None = None
        if needs_approval is None or spec.oauth is not None:
            preflight = await self._preflight(call, spec, arguments, force=False)
            if needs_approval is None:
                needs_approval = preflight.approval_required
        if needs_approval:
            record.status = "awaiting_approval"
            decision = await self._await_approval(call, spec, arguments)
            if not decision.approve:
                record.status = "denied"
                text = f"denied by {decision.decider}" + (
                    f": {decision.reason}" if decision.reason else ""
                )
                record.result = text
                if self._config.approval.on_deny == "end_run":
                    raise _EndRun(RunStatus.FAILED, f"tool call {call.id} ({spec.name}) {text}")
                return Message.tool(
                    call.id, spec.name, error_message_for_model(call.id, spec.name, Denied(text))
                )
        grant_ref = preflight.grant_ref if preflight else None
        while True:
            if preflight is not None and preflight.authorization_url:
                record.status = "awaiting_authorization"
                completed = await self._await_authorization(call, spec, preflight)
                if completed.error or not completed.grant_ref:
                    record.status = "failed"
                    record.error_kind = ErrorKind.UNAUTHORIZED.value
                    record.result = f"authorization failed: {completed.error}"
                    refused = NeedsAuthorization(f"authorization failed: {completed.error}")
                    return Message.tool(
                        call.id, spec.name, error_message_for_model(call.id, spec.name, refused)
                    )
                grant_ref = completed.grant_ref
            record.status = "running"
            outcome = await self._execute(call, spec, arguments, record, grant_ref)
            if outcome.error_kind != ErrorKind.UNAUTHORIZED.value or spec.oauth is None:
                return Message.tool(call.id, spec.name, outcome.content)
            # The token was revoked or lacks a scope: ask the user again, then retry.
            self._event("tool.unauthorized", call, detail="token rejected; re-authorizing")
            preflight = await self._preflight(call, spec, arguments, force=True)

    async def _preflight(
        self, call: ToolCall, spec: ToolSpec, arguments: dict[str, Any], *, force: bool
    ) -> PreflightResult:
        result: PreflightResult = await workflow.execute_activity(
            PREFLIGHT_ACTIVITY,
            PreflightRequest(
                call_id=call.id,
                tool_name=spec.name,
                arguments=arguments,
                workflow_id=workflow.info().workflow_id,
                identity=self._input.identity,
                force_reauthorization=force,
            ),
            result_type=PreflightResult,
            start_to_close_timeout=timedelta(seconds=30),
            summary=f"preflight {spec.name} {call.id}",
        )
        return result

    async def _execute(
        self,
        call: ToolCall,
        spec: ToolSpec,
        arguments: dict[str, Any],
        record: ToolCallRecord,
        grant_ref: str | None,
    ) -> ToolOutcome:
        if spec.subagent is not None:
            return await self._run_subagent(call, spec, arguments, record)
        options = self._options.get(spec.name)
        if options is None:
            options = self._options[spec.name] = activity_options_for(spec)
        info = workflow.info()
        summary = (
            f"{spec.name} {call.id} {record.arguments}"[:200]
            if self._config.activity_summaries
            else None
        )
        record.started_at = workflow.now()
        self._event("tool.started", call)
        attempts = 0
        while True:
            invocation = ToolInvocation(
                call_id=call.id,
                tool_name=spec.name,
                arguments=arguments,
                workflow_id=info.workflow_id,
                identity=self._input.identity,
                idempotency_key=self._keys[call.id],
                attempt_offset=attempts,
                output_limit_bytes=self._config.output_limit_bytes,
                grant_ref=grant_ref,
            )
            try:
                if options.local:
                    outcome: ToolOutcome = await workflow.execute_local_activity(
                        spec.name,
                        invocation,
                        result_type=ToolOutcome,
                        start_to_close_timeout=options.start_to_close_timeout,
                        schedule_to_close_timeout=options.schedule_to_close_timeout,
                        retry_policy=options.retry_policy,
                        summary=summary,
                    )
                else:
                    outcome = await workflow.execute_activity(
                        spec.name,
                        invocation,
                        result_type=ToolOutcome,
                        task_queue=options.task_queue,
                        start_to_close_timeout=options.start_to_close_timeout,
                        schedule_to_close_timeout=options.schedule_to_close_timeout,
                        heartbeat_timeout=options.heartbeat_timeout,
                        retry_policy=options.retry_policy,
                        summary=summary,
                    )
            except ActivityError as err:
                if isinstance(err.cause, CancelledError) and self._cancel_reason is not None:
                    return self._cancelled_outcome(call, spec, record)
                attempts += 1
                failure = self._failure_outcome(call, spec, err)
                retry = spec.policy.retry
                cause = err.cause
                retryable = isinstance(cause, ApplicationError) and not cause.non_retryable
                if (
                    options.workflow_retries
                    and retryable
                    and (retry.maximum_attempts == 0 or attempts < retry.maximum_attempts)
                ):
                    delay = retry_delay(
                        retry,
                        attempts,
                        _seconds_of(cause.next_retry_delay)
                        if isinstance(cause, ApplicationError)
                        else None,
                    )
                    self._event("tool.retrying", call, detail=f"in {delay:.1f}s: {failure.content}")
                    await workflow.sleep(timedelta(seconds=delay))
                    continue
                if retryable or isinstance(cause, TimeoutError):
                    self._event("tool.policy_exhausted", call, detail=failure.content[:300])
                return self._record_outcome(call, record, failure, attempts)
            except asyncio.CancelledError:
                if self._cancel_reason is None:
                    raise
                return self._cancelled_outcome(call, spec, record)
            return self._record_outcome(call, record, outcome, outcome.attempt)

    async def _run_subagent(
        self, call: ToolCall, spec: ToolSpec, arguments: dict[str, Any], record: ToolCallRecord
    ) -> ToolOutcome:
        assert spec.subagent is not None
        workflow_id = workflow.info().workflow_id
        child_id = f"{workflow_id}.{self._keys[call.id][len(workflow_id) + 1 :]}"
        record.child_run_id = child_id
        record.started_at = workflow.now()
        self._event("tool.started", call, detail=f"sub-agent run {child_id}")
        child_input = AgentInput(
            prompt=str(arguments["task"]),
            config=AgentConfig.model_validate(spec.subagent),
            identity=self._input.identity,
            granted_scopes=self._input.granted_scopes,
            depth=self._depth + 1,
            max_depth=self._max_depth,
        )
        try:
            result: AgentResult = await workflow.execute_child_workflow(
                "AgentWorkflow",
                child_input,
                id=child_id,
                result_type=AgentResult,
                static_summary=f"sub-agent {spec.name} of {workflow.info().workflow_id}",
                # If this run closes first, its sub-agents are asked to stop, not killed.
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            )
        except asyncio.CancelledError:
            if self._cancel_reason is None:
                raise
            return self._cancelled_outcome(call, spec, record)
        except ChildWorkflowError as err:
            failure = ToolExecutionError(f"sub-agent run {child_id} failed: {err.cause or err}")
            return self._record_outcome(call, record, error_outcome(call.id, spec.name, failure), 1)
        ok = result.status == RunStatus.COMPLETED
        answer = result.final_answer if ok else f"ended {result.status.value}: {result.reason}"
        outcome = ToolOutcome(
            call_id=call.id,
            tool_name=spec.name,
            content=f"{answer}\n\n[sub-agent run {child_id}: {result.status.value}]",
            is_error=not ok,
            error_kind=None if ok else ErrorKind.EXECUTION.value,
        )
        return self._record_outcome(call, record, outcome, 1)

    def _cancelled_outcome(
        self, call: ToolCall, spec: ToolSpec, record: ToolCallRecord
    ) -> ToolOutcome:
        record.status = "cancelled"
        record.finished_at = workflow.now()
        self._event("tool.cancelled", call, detail=self._cancel_reason)
        return error_outcome(call.id, spec.name, Cancelled(self._cancel_reason or "cancelled"))

    def _failure_outcome(self, call: ToolCall, spec: ToolSpec, err: ActivityError) -> ToolOutcome:
        cause = err.cause
        if isinstance(cause, ApplicationError):
            kind = cause.type or ErrorKind.EXECUTION.value
            details = cause.details
            text = (
                details[0]
                if details and isinstance(details[0], str)
                else f"Error [{kind}] tool call {call.id} ({spec.name}) failed: {cause.message}"
            )
        elif isinstance(cause, TimeoutError):
            which = cause.type.name.lower().replace("_", "-") if cause.type else "activity"
            effect = "" if spec.safety.safe_to_repeat else "; it may or may not have taken effect"
            return error_outcome(call.id, spec.name, ToolTimeout(f"{which} timeout{effect}"))
        elif isinstance(cause, CancelledError):
            return error_outcome(call.id, spec.name, Cancelled("the call was cancelled"))
        else:
            return error_outcome(call.id, spec.name, ToolExecutionError(str(cause or err)))
        return ToolOutcome(
            call_id=call.id, tool_name=spec.name, content=text, is_error=True, error_kind=kind
        )

    def _record_outcome(
        self, call: ToolCall, record: ToolCallRecord, outcome: ToolOutcome, attempts: int
    ) -> ToolOutcome:
        record.finished_at = workflow.now()
        record.attempts = max(attempts, 1)
        record.result = outcome.content[:300]
        record.error_kind = outcome.error_kind
        if outcome.skipped:
            record.status = "skipped"
        elif outcome.is_error:
            record.status = "failed"
        else:
            record.status = "completed"
        self._event(
            "tool.failed" if outcome.is_error else "tool.completed",
            call,
            detail=outcome.error_kind,
        )
        return outcome

    def _search_tools(self, call: ToolCall, record: ToolCallRecord) -> Message:
        try:
            arguments = parse_arguments(call.arguments)
            query = str(arguments.get("query", ""))
        except InvalidArguments as error:
            record.status = "invalid"
            return Message.tool(
                call.id, call.name, error_message_for_model(call.id, call.name, error)
            )
        found = search_specs(
            [s for s in self._catalog if s.loading == LoadingMode.DEFERRED], query, limit=5
        )
        for spec in found:
            if spec.name not in self._discovered:
                self._discovered.append(spec.name)
                self._tools_ref = None  # the next model call sends the new set
        record.status = "completed"
        record.result = ", ".join(s.name for s in found) or "no match"
        self._event("tool.search", call, detail=record.result)
        lines = [f"- {s.name}: {s.description}" for s in found]
        text = (
            "Tools found (callable from your next message):\n" + "\n".join(lines)
            if found
            else f"No tool matches {query!r}."
        )
        return Message.tool(call.id, call.name, text)

    # -------------------------------------------------------- human in the loop

    async def _await_approval(
        self, call: ToolCall, spec: ToolSpec, arguments: dict[str, Any]
    ) -> ApprovalDecision:
        policy = self._config.approval
        now = workflow.now()
        timeout = policy.timeout_seconds
        pending = PendingApproval(
            call_id=call.id,
            tool=spec.name,
            arguments=redact_arguments(arguments, spec.safety.redact),
            arguments_hash=arguments_hash(arguments),
            deciders=list(policy.deciders),
            requested_at=now,
            deadline=now + timedelta(seconds=timeout) if timeout else None,
        )
        self._decisions.pop(call.id, None)  # a reused call id starts undecided
        self._pending[call.id] = pending
        self._event("approval.requested", call, detail=f"hash {pending.arguments_hash[:12]}")
        self._publish()
        try:
            while True:
                try:
                    await workflow.wait_condition(
                        lambda: call.id in self._decisions or self._cancel_reason is not None,
                        timeout=timeout,
                    )
                except builtins.TimeoutError:
                    if policy.on_timeout == "escalate" and not pending.escalated:
                        timeout = policy.escalation_timeout_seconds or policy.timeout_seconds
                        pending.escalated = True
                        pending.deciders = list(policy.escalate_to)
                        pending.deadline = workflow.now() + timedelta(seconds=timeout or 0)
                        self._event("approval.escalated", call, detail=", ".join(pending.deciders))
                        self._publish()
                        continue
                    if policy.on_timeout == "fail":
                        raise _EndRun(
                            RunStatus.FAILED,
                            f"approval of tool call {call.id} ({spec.name}) passed its deadline",
                        ) from None
                    self._decisions[call.id] = ApprovalDecision(
                        call_id=call.id,
                        approve=False,
                        decider="deadline",
                        reason="no decision before the deadline",
                    )
                    self._event("approval.expired", call)
                break
            self._check_call_cancelled()
            return self._decisions[call.id]
        finally:
            self._pending.pop(call.id, None)
            _unless_evicted(self._publish)

    async def _await_authorization(
        self, call: ToolCall, spec: ToolSpec, preflight: PreflightResult
    ) -> AuthorizationCompleted:
        assert spec.oauth is not None and preflight.authorization_url is not None
        self._grants.pop(call.id, None)
        self._authorizations[call.id] = PendingAuthorization(
            call_id=call.id,
            tool=spec.name,
            provider=spec.oauth.provider,
            scopes=list(spec.oauth.scopes),
            authorization_url=preflight.authorization_url,
            requested_at=workflow.now(),
        )
        self._event("authorization.requested", call, detail=spec.oauth.provider)
        self._publish()
        try:
            await workflow.wait_condition(
                lambda: call.id in self._grants or self._cancel_reason is not None
            )
            self._check_call_cancelled()
            completed = self._grants.pop(call.id)
            self._event(
                "authorization.completed" if completed.grant_ref else "authorization.failed",
                call,
                detail=completed.error,
            )
            return completed
        finally:
            self._authorizations.pop(call.id, None)
            _unless_evicted(self._publish)

    # ----------------------------------------------------------------- handlers

    @workflow.update
    async def decide(self, decision: ApprovalDecision) -> str:
        """Approve or deny a pending tool call. Invalid decisions are rejected by the validator
        and never enter history."""
        self._record_decision(decision)
        return "approved" if decision.approve else "denied"

    @decide.validator
    def _validate_decision(self, decision: ApprovalDecision) -> None:
        check_decision(decision, self._pending, set(self._decisions))

    @workflow.signal(name="decision")
    def decision_signal(self, decision: ApprovalDecision) -> None:
        """Fire-and-forget decision (webhooks). An invalid one is recorded and ignored."""
        try:
            check_decision(decision, self._pending, set(self._decisions))
        except InvalidDecision as error:
            self._event("approval.rejected", tool=None, call_id=decision.call_id, detail=str(error))
            return
        self._record_decision(decision)

    def _record_decision(self, decision: ApprovalDecision) -> None:
        self._decisions[decision.call_id] = decision
        verdict = "approved" if decision.approve else "denied"
        detail = f"{verdict} by {decision.decider}" + (
            f": {decision.reason}" if decision.reason else ""
        )
        self._event("approval.decided", call_id=decision.call_id, detail=detail)

    @workflow.signal
    def authorization_completed(self, completed: AuthorizationCompleted) -> None:
        """The OAuth callback finished (or failed) an authorization for a waiting call."""
        if completed.call_id not in self._authorizations:
            self._event(
                "authorization.ignored",
                call_id=completed.call_id,
                detail="no authorization pending for this call",
            )
            return
        self._grants[completed.call_id] = completed

    @workflow.signal
    def steer(self, instruction: str) -> None:
        """A new instruction, given to the model as a user message before its next turn."""
        self._steer.append(instruction)
        self._event("run.steered", detail=instruction[:200])

    @workflow.signal
    def cancel(self, reason: str | None = None) -> None:
        """End the run cleanly: running tools are cancelled (through their heartbeats)."""
        if self._cancel_reason is None:
            self._cancel_reason = reason or "cancelled by request"
            self._event("run.cancel_requested", detail=self._cancel_reason)
            self._cancel_running(self._cancel_reason)

    @workflow.query
    def status(self) -> RunSnapshot:
        """What the run is doing now."""
        return RunSnapshot(
            status=self._status,
            agent=self._config.name,
            turn=self._turn,
            tool_calls=self._tool_calls,
            final_answer=self._final_answer,
            reason=self._reason,
            pending_approvals=list(self._pending.values()),
            pending_authorizations=list(self._authorizations.values()),
            running_tools=sorted(self._running),
            continued=self._continued,
            conversation_offset=self._offset,
        )

    @workflow.query
    def conversation(self) -> list[Message]:
        """The whole conversation so far."""
        return self._conversation

    @workflow.query
    def timeline(self) -> list[ToolCallRecord]:
        """Every tool call, in the order the model asked for them."""
        return self._timeline

    @workflow.query
    def events(self) -> list[RunEvent]:
        """The run's event log."""
        return self._events

    # ------------------------------------------------------------------ helpers

    def _event(
        self,
        name: str,
        call: ToolCall | None = None,
        *,
        tool: str | None = None,
        call_id: str | None = None,
        detail: str | None = None,
    ) -> None:
        self._events.append(
            RunEvent(
                at=workflow.now(),
                event=name,
                call_id=call.id if call else call_id,
                tool=call.name if call else tool,
                detail=detail,
            )
        )

    def _check_cancelled(self) -> None:
        if self._cancel_reason is not None:
            raise _EndRun(RunStatus.CANCELLED, self._cancel_reason)

    def _cancel_running(self, reason: str) -> None:
        for task in self._running.values():
            if not task.done():
                task.cancel(reason)

    def _current_status(self) -> RunStatus:
        if self._status in _FINAL:
            return self._status
        if self._pending:
            return RunStatus.AWAITING_APPROVAL
        if self._authorizations:
            return RunStatus.AWAITING_AUTHORIZATION
        return RunStatus.RUNNING

    def _publish(self, doing: str | None = None) -> None:
        """Keep search attributes and the UI's current details in step with the run."""
        self._status = self._current_status()
        awaiting = next(
            (p.tool for p in self._pending.values()),
            next((a.tool for a in self._authorizations.values()), ""),
        )
        state = (self._status.value, len(self._pending), awaiting)
        if state != self._published:
            self._published = state
            workflow.upsert_search_attributes(
                [
                    sa.AGENT_STATUS.value_set(self._status.value),
                    sa.AGENT_NAME.value_set(self._config.name),
                    sa.PENDING_APPROVALS.value_set(len(self._pending)),
                    sa.AWAITING_TOOL.value_set(awaiting),
                ]
            )
        workflow.set_current_details(self._details(doing))

    def _details(self, doing: str | None) -> str:
        run_id = workflow.info().workflow_id
        lines = [f"**{self._status.value}** · turn {self._turn} · {self._tool_calls} tool calls"]
        for p in self._pending.values():
            lines.append(
                f"- waiting for approval of `{p.tool}` (call `{p.call_id}`): "
                f"`durable-tools approve {run_id} {p.call_id}` or `durable-tools deny ...`"
            )
        for a in self._authorizations.values():
            lines.append(
                f"- waiting for {a.provider} authorization for `{a.tool}` (call `{a.call_id}`): "
                f"the user opens {a.authorization_url}"
            )
        if doing:
            lines.append(doing)
        if self._reason:
            lines.append(self._reason)
        return "\n".join(lines)

    def _finish(self, status: RunStatus, *, reason: str | None = None) -> AgentResult:
        self._status = status
        self._reason = reason
        self._pending.clear()
        self._authorizations.clear()
        self._publish()
        self._event("run." + status.value, detail=reason)
        return AgentResult(
            status=status,
            final_answer=self._final_answer,
            reason=reason,
            turns=self._turn,
            tool_calls=self._tool_calls,
        )

    async def _maybe_continue_as_new(self) -> None:
        info = workflow.info()
        limit = self._config.continue_as_new_after_events
        if not (
            info.is_continue_as_new_suggested()
            or (limit is not None and info.get_current_history_length() >= limit)
        ):
            return
        # Handlers may still be mid-flight (an update that arrived this task): let them end,
        # so nothing a caller was promised is dropped by the new run.
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._event("run.continuing_as_new", detail=f"{info.get_current_history_length()} events")
        conversation, offset = self._conversation, self._offset
        if self._snapshot is not None and _json_size(conversation) > _CARRY_CONVERSATION_BYTES:
            # The new run's input must stay under the payload limit: what the snapshot
            # already holds is carried by reference only.
            conversation = conversation[self._snapshot_length - offset :]
            offset = self._snapshot_length
        workflow.continue_as_new(
            AgentInput(
                prompt=self._input.prompt,
                config=self._config,
                identity=self._input.identity,
                granted_scopes=self._input.granted_scopes,
                carried=CarriedState(
                    conversation=conversation,
                    conversation_offset=offset,
                    snapshot=self._snapshot,
                    snapshot_length=self._snapshot_length,
                    turn=self._turn,
                    tool_calls=self._tool_calls,
                    catalog=self._catalog,
                    timeline=self._timeline[-_CARRY_LIMIT:],
                    events=self._events[-_CARRY_LIMIT:],
                    pending_steer=self._steer,
                    discovered=self._discovered,
                    call_uses=self._call_uses,
                    continued=self._continued + 1,
                ),
            )
        )


def _unless_evicted(publish: Callable[[], None]) -> None:
    """Run `publish` unless the workflow is being evicted from the worker's cache.

    On eviction the SDK closes pending coroutines (GeneratorExit runs their `finally`
    blocks) outside the workflow event loop, where workflow calls would raise.
    """
    if workflow.in_workflow() and not isinstance(sys.exception(), GeneratorExit):
        publish()


def _json_size(messages: list[Message]) -> int:
    return sum(len(m.model_dump_json(exclude_defaults=True)) for m in messages)


def _seconds_of(delay: timedelta | None) -> float | None:
    return None if delay is None else delay.total_seconds()
