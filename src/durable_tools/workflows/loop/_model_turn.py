"""One model turn: what the model is offered and the model activity that answers.

Only the messages added since the last conversation snapshot cross into history; the
activity rebuilds the rest from the artifact store. Tool definitions are sent once per
advertised set, then by reference.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from durable_tools._activities._types import MODEL_ACTIVITY, SNAPSHOT_MISSING, ModelCall, ModelTurn
from durable_tools.messages import Message, ModelRequest, ModelResponse, ToolDefinition
from durable_tools.protocol._limits import (
    MAX_CALL_ID_CHARS,
    PAYLOAD_BUDGET_BYTES,
    payload_bytes,
    short_call_id,
)
from durable_tools.protocol._run_io import REVISION_LOCAL_CATALOG, REVISION_SAFETY_NOTES
from durable_tools.protocol._types import RunStatus
from durable_tools.tools import ArtifactRef, ToolSpec
from durable_tools.tools._model_description import model_description
from durable_tools.tools._names import alias_provider
from durable_tools.workflows.catalog._run_catalog import (
    follow_worker,
    note_worker_version,
)
from durable_tools.workflows.catalog._selection import select_tools
from durable_tools.workflows.catalog._tool_search import search_definition
from durable_tools.workflows.catalog._view import advertised, has_deferred, offered_tools
from durable_tools.workflows.loop._compaction import (
    compact_context,
    context_too_long,
    note_context,
    prepare_context,
)
from durable_tools.workflows.loop._fallback import ModelsFailed, send_in_order
from durable_tools.workflows.loop._final_output import native_output, output_tools
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.script._stubs import host_specs, script_definition

__all__ = ["SAFETY_NOTES_PATCH", "call_model", "describe"]

# Below this many characters of new messages the model activity's input cannot reach the
# payload budget (JSON escapes at most 6 bytes a character), so it is not measured.
_UNMEASURED_CHARS = (PAYLOAD_BUDGET_BYTES - 64_000) // 6


SAFETY_NOTES_PATCH = "safety-notes-reach-the-model"
"""Marks a run of an older input revision (see `describe`) whose tool descriptions carry the
tools' safety notes. Replays of runs from before keep the descriptions they were given
(their length counts toward compaction)."""


def describe(state: RunState, spec: ToolSpec) -> str:
    """The description the model reads (`tools._model_description`), with its safety notes
    in runs whose starter knows them (`REVISION_SAFETY_NOTES`, in the start event: no
    marker). Runs of revision 2 keep the descriptions they had: their catalog is a local
    activity, and where its result lands (this task or the next) differs between a run and
    its replay, so a patch asked right after it can fail a replay. Runs below revision 2
    (continued runs, older starters) ask the patch, only for a tool that has notes."""
    revision = state.input.revision
    notes = bool(spec.safety_notes) and (
        revision >= REVISION_SAFETY_NOTES
        or (revision < REVISION_LOCAL_CATALOG and workflow.patched(SAFETY_NOTES_PATCH))
    )
    return model_description(spec, safety_notes=notes)


def _tool_definitions(state: RunState) -> list[ToolDefinition]:
    offered = offered_tools(state)
    # A catalog update may change a tool's schema under the same names: the count of
    # changes is part of the key.
    key = (f"#{state.catalog.advertised_changes}", *offered)
    if state.model.definitions is None or state.model.definitions[0] != key:
        provider = alias_provider(state.config.model)
        definitions = [
            ToolDefinition(
                # The name the run's provider knows it by (validation maps it back).
                name=spec.aliases.get(provider, spec.name),
                description=describe(state, spec),
                parameters=spec.input_schema,
                strict=spec.strict,
            )
            for spec in offered.values()
        ]
        if has_deferred(state):
            definitions.append(search_definition())
        if state.config.code_mode is not None:  # after the tools its description lists
            definitions.append(script_definition(host_specs(offered), state.config.code_mode))
        definitions += output_tools(state)  # structured output's `final_answer`, if any
        state.model.definitions = (key, definitions)
    return state.model.definitions[1]


async def call_model(state: RunState) -> ModelResponse:
    """Ask the model for its next message; call ids come back bounded in length.

    With `AgentConfig.compaction`, the context is compacted first when the input would
    pass its share of the window, and once more (then the call is retried once) when the
    provider says the input is too long (see `_compaction`).
    """
    await follow_worker(state)  # a changed catalog reaches this turn
    select_tools(state, advertised(state))  # the run's selector, if any, for this turn
    compaction = state.config.compaction
    projected = 0
    changes = state.catalog.advertised_changes  # the set the definitions sent are for
    if compaction is not None:
        projected = await prepare_context(state, compaction, lambda: _tool_definitions(state))
    try:
        turn = await _send(state)
    except ModelsFailed as failed:
        err = failed.error
        if compaction is None or not context_too_long(err):
            raise _model_failure(err, failed.note) from err
        state.event("context.too_long", detail=_failure_detail(err)[:500])
        after = await compact_context(
            state,
            compaction,
            lambda: _tool_definitions(state),
            "provider",
            "the provider found the input too long",
            projected,
        )
        if after is None:
            raise _model_failure(err, failed.note) from err
        projected = after
        try:
            turn = await _send(state)
        except ModelsFailed as again:
            note = " (after compacting the context once)" + again.note
            raise _model_failure(again.error, note) from again.error
    note_worker_version(state, turn.catalog_version)
    state.snapshot = turn.snapshot
    state.snapshot_length = turn.snapshot_length
    if turn.tools_ref is not None:
        state.model.tools_ref = (changes, turn.tools_ref)
    if compaction is not None:
        note_context(state.model, turn.response, projected)
    _bound_call_ids(state, turn.response.message)
    return turn.response


async def _send(state: RunState) -> ModelTurn:
    """The model activity of each of the run's models in order, until one answers.

    Raises:
        ModelsFailed: with the last model's `ActivityError`.
    """
    return await send_in_order(state, lambda spec: _send_to(state, spec))


async def _send_to(state: RunState, spec: str) -> ModelTurn:
    """The model activity over the snapshot; raises its `ActivityError` when it fails."""
    new = state.conversation[state.snapshot_length - state.offset :]
    try:
        return await _model_activity(
            state, spec, new, state.snapshot, state.snapshot_length, _current_tools_ref(state)
        )
    except ActivityError as err:
        cause = err.cause
        if not (
            isinstance(cause, ApplicationError)
            and cause.type == SNAPSHOT_MISSING
            and state.offset == 0
        ):
            raise
        # This worker cannot see the snapshot (a store not shared between machines):
        # send the conversation in full once, which starts a new chain.
        state.event("model.snapshot_missing", detail=cause.message[:200])
        return await _model_activity(state, spec, state.conversation, None, 0, None)


def _current_tools_ref(state: RunState) -> ArtifactRef | None:
    """The stored definitions, unless a search changed the advertised set since."""
    stored = state.model.tools_ref
    if stored is None or stored[0] != state.catalog.advertised_changes:
        return None
    return stored[1]


async def _model_activity(
    state: RunState,
    spec: str,
    messages: list[Message],
    base: ArtifactRef | None,
    base_length: int,
    tools_ref: ArtifactRef | None,
) -> ModelTurn:
    config = state.config
    request = ModelRequest(
        model=spec,
        messages=messages,
        tools=[] if tools_ref is not None else _tool_definitions(state),
        turn=state.turn,
        run_id=workflow.info().workflow_id,
        settings=config.model_settings,
        output=native_output(config),
    )
    call = ModelCall(
        request=request,
        base=base,
        base_length=base_length,
        tools_ref=tools_ref,
        stream=config.stream_tokens,
        context=state.model.context,
    )
    _check_input_size(call, messages)
    turn: ModelTurn = await workflow.execute_activity(
        MODEL_ACTIVITY,
        call,
        result_type=ModelTurn,
        start_to_close_timeout=timedelta(seconds=config.model_timeout_seconds),
        # A model call whose completion was lost (worker or server killed) is retried
        # within seconds instead of waiting out the whole start-to-close timeout.
        heartbeat_timeout=timedelta(seconds=config.model_heartbeat_seconds),
        retry_policy=RetryPolicy(maximum_attempts=config.model_max_attempts),
        summary=(f"model {spec} turn {state.turn + 1}" if config.activity_summaries else None),
    )
    return turn


def _check_input_size(call: ModelCall, messages: list[Message]) -> None:
    """End the run with a reason instead of scheduling an input Temporal would refuse."""
    chars = sum(
        len(m.content or "") + sum(len(c.arguments) for c in m.tool_calls) for m in messages
    )
    if chars < _UNMEASURED_CHARS:
        return
    size = payload_bytes(call)
    if size > PAYLOAD_BUDGET_BYTES:
        raise EndRun(
            RunStatus.FAILED,
            f"the model call's input would be {size:,} bytes, over the {PAYLOAD_BUDGET_BYTES:,}"
            "-byte payload budget (the messages since the last conversation snapshot are too "
            "large to send)",
        )


def _failure_detail(err: ActivityError) -> str:
    cause = err.cause
    return cause.message if isinstance(cause, ApplicationError) else str(cause or err)


def _model_failure(err: ActivityError, note: str = "") -> ApplicationError:
    return ApplicationError(
        f"model call failed{note}: {_failure_detail(err)}", type="ModelError", non_retryable=True
    )


def _bound_call_ids(state: RunState, message: Message) -> None:
    """Shorten call ids (and tool names) too long to repeat safely in the model's message.

    The id and name are repeated in the tool message, the timeline, events and activity
    inputs: a megabyte id would push those payloads over Temporal's limit. The assistant
    message is rewritten too, so the conversation stays well formed for the provider.
    """
    for call in message.tool_calls:
        if len(call.id) > MAX_CALL_ID_CHARS:
            short = short_call_id(call.id)
            state.event(
                "model.call_id_shortened",
                call_id=short,
                detail=f"the model sent a call id of {len(call.id):,} characters",
            )
            call.id = short
        if len(call.name) > MAX_CALL_ID_CHARS:
            # No tool has such a name (names are at most 64 characters): it stays unknown.
            call.name = short_call_id(call.name)
