"""The framework's own activities: the catalog (plain and packed), the model call, and the
preflight."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pydantic import TypeAdapter
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_tools._activities._catalog_cache import PackedCatalogs
from durable_tools._activities._client_tools import client_tool_specs
from durable_tools._activities._compact import compact_activity
from durable_tools._activities._conversation import (
    ConversationSnapshots,
    SnapshotMissing,
    snapshot_unavailable,
)
from durable_tools._activities._model_limits import ModelLimiter
from durable_tools._activities._runtime import AuthorizationBroker, ExpiringLinks, ToolRuntime
from durable_tools._activities._types import (
    CATALOG_ACTIVITY,
    CATALOG_UPDATE_ACTIVITY,
    MODEL_ACTIVITY,
    PREFLIGHT_ACTIVITY,
    SNAPSHOT_MISSING,
    CatalogRequest,
    CatalogUpdate,
    CatalogUpdateRequest,
    ModelCall,
    ModelTurn,
    PreflightRequest,
    PreflightResult,
)
from durable_tools._activities._versions_told import VersionsTold
from durable_tools.messages import Message
from durable_tools.models import resolve_model
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES, check_handler_prefix
from durable_tools.protocol._models import ModelLimits
from durable_tools.streaming._model import complete_streaming
from durable_tools.tools._approval_summary import SummaryThreads, summarize_call
from durable_tools.tools._catalog import IdentityIncomplete, require_identity
from durable_tools.tools._catalog_pack import (
    CATALOG_PACKED_ACTIVITY,
    CatalogTooLarge,
    PackedCatalog,
    pack,
)
from durable_tools.tools._errors import ToolNotFound
from durable_tools.tools._formatting import valid_text
from durable_tools.tools._results import ArtifactRef
from durable_tools.tools._spec import OAuthRequirement, ToolSpec

__all__ = ["core_activities"]

_T = TypeVar("_T")
_SPECS: TypeAdapter[list[ToolSpec]] = TypeAdapter(list[ToolSpec])


async def _heartbeating(call: Awaitable[_T]) -> _T:
    """Await a model call, heartbeating while it is in flight.

    With a heartbeat timeout on the activity (`AgentConfig.model_heartbeat_seconds`), a model
    call whose worker or server died is retried after that timeout instead of after the whole
    start-to-close timeout. Heartbeats go out three times per timeout (the SDK throttles
    them further); without a heartbeat timeout there is nobody to tell.
    """
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        return await call
    every = timeout.total_seconds() / 3
    task = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        task.cancel()  # an activity cancelled mid-call stops the model call too


def _takes_handler_prefix(method: Callable[..., Any]) -> bool:
    """Whether a broker's link method accepts `handler_prefix=` (brokers written before
    embedded loops could be authorized do not)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.name == "handler_prefix" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    )


async def _authorization_link(
    broker: AuthorizationBroker,
    request: PreflightRequest,
    requirement: OAuthRequirement,
    result: PreflightResult,
) -> None:
    """Start an authorization for the call; put its URL (and expiry) into `result`.

    The broker learns the run's handler prefix only when there is one (an embedded loop),
    so that brokers whose methods take no `handler_prefix` keep serving agent workflows.
    """
    try:
        prefix = check_handler_prefix(request.handler_prefix)
    except ValueError as error:
        raise ApplicationError(
            str(error), type="InvalidHandlerPrefix", non_retryable=True
        ) from None
    args = (request.identity, requirement, request.workflow_id, request.call_id)
    method: Callable[..., Awaitable[Any]] = (
        broker.authorization_link if isinstance(broker, ExpiringLinks) else broker.authorization_url
    )
    extra: dict[str, Any] = {}
    if prefix:
        if not _takes_handler_prefix(method):
            raise ApplicationError(
                f"this worker's OAuth broker ({type(broker).__name__}) cannot authorize a call "
                f"of an agent embedded under the handler prefix {prefix!r}: its "
                f"{method.__name__} takes no handler_prefix keyword, so the callback could not "
                "wake the run",
                type="OAuthBrokerTooOld",
                non_retryable=True,
            )
        extra["handler_prefix"] = prefix
    answer = await method(*args, **extra)
    if isinstance(broker, ExpiringLinks):
        result.authorization_url, result.authorization_expires_at = answer
    else:
        result.authorization_url = answer


def core_activities(
    runtime: ToolRuntime,
    model_limits: Mapping[str, ModelLimits] | None = None,
    *,
    model_limiter: ModelLimiter | None = None,
) -> list[Callable[..., Any]]:
    """The catalog, model, compact and preflight activities bound to a worker's runtime.

    Calls of a model in `model_limits` (or `model_limiter`'s) wait for their start from
    the model's limiter.
    """
    registry = runtime.registry
    limiter = model_limiter or (ModelLimiter(model_limits) if model_limits else None)

    def visible(request: CatalogRequest) -> list[ToolSpec]:
        if request.tools is not None:
            known = {spec.name for spec in registry.specs()}
            unknown = sorted(set(request.tools) - known)
            if unknown:
                raise ApplicationError(
                    f"the agent asks for tools this worker does not have: {', '.join(unknown)}",
                    type="UnknownTools",
                    non_retryable=True,
                )
        try:
            if runtime.required_identity:
                require_identity(request.identity, runtime.required_identity, "this worker")
            specs = registry.catalog(
                identity=request.identity, granted_scopes=request.granted_scopes
            )
        except IdentityIncomplete as error:
            raise ApplicationError(
                str(error), type="IdentityIncomplete", non_retryable=True
            ) from None
        if request.tools is not None:
            wanted = set(request.tools)
            specs = [spec for spec in specs if spec.name in wanted]
        if request.client_tools:
            # Against the whole registry, not only the tools offered: a client tool
            # must not shadow any tool of the worker's.
            specs += client_tool_specs(request.client_tools, registry.specs())
        return specs

    @activity.defn(name=CATALOG_ACTIVITY)
    async def catalog(request: CatalogRequest) -> list[ToolSpec]:
        # Runs that started before the packed catalog still ask for this one.
        specs = visible(request)
        size = len(_SPECS.dump_json(specs))
        if size > PAYLOAD_BUDGET_BYTES:
            # Temporal would refuse the result and the activity would retry for ever.
            raise ApplicationError(
                f"the run's tool catalog is too large to start a run: {len(specs):,} tools, "
                f"{size:,} bytes as JSON, over the {PAYLOAD_BUDGET_BYTES:,}-byte payload budget",
                type="CatalogTooLarge",
                non_retryable=True,
            )
        return specs

    recent = PackedCatalogs()
    told = VersionsTold()

    async def packed_now(request: CatalogRequest) -> PackedCatalog:
        # The version before the specs: a change in between makes the run read again.
        version = registry.version()

        async def make() -> PackedCatalog:
            specs = visible(request)
            try:
                # In a thread: compressing a large catalog takes a moment.
                packed = await asyncio.to_thread(pack, specs, budget=PAYLOAD_BUDGET_BYTES)
            except CatalogTooLarge as error:
                raise ApplicationError(
                    str(error), type="CatalogTooLarge", non_retryable=True
                ) from None
            packed.version = version
            return packed

        return await recent.get((version, request.model_dump_json()), make)

    @activity.defn(name=CATALOG_PACKED_ACTIVITY)
    async def catalog_packed(request: CatalogRequest) -> PackedCatalog:
        return await packed_now(request)

    @activity.defn(name=CATALOG_UPDATE_ACTIVITY)
    async def catalog_update(update: CatalogUpdateRequest) -> CatalogUpdate:
        version = registry.version()
        if version == update.known:
            return CatalogUpdate(version=version)
        packed = await packed_now(update.request)
        return CatalogUpdate(version=packed.version or version, packed=packed)

    snapshots = ConversationSnapshots(runtime.artifact_store)
    summary_threads = SummaryThreads()  # the worker's, not the loop's default executor

    @activity.defn(name=MODEL_ACTIVITY)
    async def model(call: ModelCall) -> ModelTurn:
        try:
            adapter = resolve_model(call.request.model)
        except ValueError as error:
            raise ApplicationError(str(error), type="ModelError", non_retryable=True) from None
        earlier: list[Message] = []
        tools = list(call.request.tools)
        try:
            # In a thread: a load the in-process cache misses reads the store (S3: network).
            # A hit (the usual case: this worker served the run's previous turn) needs none.
            if call.base is not None:
                hit = snapshots.cached(call.base, call.base_length)
                earlier = (
                    hit
                    if hit is not None
                    else await asyncio.to_thread(snapshots.load, call.base, call.base_length)
                )
            if call.tools_ref is not None:
                known = snapshots.cached_tools(call.tools_ref)
                tools = (
                    known
                    if known is not None
                    else await asyncio.to_thread(snapshots.load_tools, call.tools_ref)
                )
        except SnapshotMissing as error:
            raise ApplicationError(str(error), type=SNAPSHOT_MISSING, non_retryable=True) from None
        added = list(call.request.messages)
        sent = [*earlier, *added]
        if call.context is not None:  # compacted: the summary stands for older messages
            try:
                sent = call.context.apply(sent)
            except ValueError as error:
                raise ApplicationError(
                    str(error), type="ContextViewInvalid", non_retryable=True
                ) from None
        request = call.request.model_copy(update={"messages": sent, "tools": tools})
        booking = None if limiter is None else await _heartbeating(limiter.admit(request))
        if call.stream:
            response = await _heartbeating(complete_streaming(adapter, request))
        else:
            response = await _heartbeating(adapter.complete(request))
        if response.message.content:
            response.message.content = valid_text(response.message.content)
        if limiter is not None and booking is not None:
            await limiter.settle(request.model, booking, response.usage)

        def store() -> tuple[ArtifactRef, ArtifactRef | None]:
            snapshot = snapshots.save(call.base, earlier, [*added, response.message])
            if call.tools_ref is None and tools:
                return snapshot, snapshots.save_tools(tools)
            return snapshot, None  # the workflow already holds the reference it sent

        # In a thread: the store's fsync must not stall the worker's event loop.
        try:
            snapshot, tools_ref = await asyncio.to_thread(store)
        except Exception as error:
            raise snapshot_unavailable(error, snapshots.store) from None
        info = activity.info()
        version = told.to_tell(
            (info.workflow_id or "", info.workflow_run_id or ""), registry.version()
        )
        return ModelTurn(
            response=response,
            snapshot=snapshot,
            snapshot_length=len(earlier) + len(added) + 1,
            tools_ref=tools_ref,
            catalog_version=version,
        )

    @activity.defn(name=PREFLIGHT_ACTIVITY)
    async def preflight(request: PreflightRequest) -> PreflightResult:
        try:
            tool = registry.get(request.tool_name)
        except ToolNotFound as error:
            raise ApplicationError(
                error.message, type=error.kind.value, non_retryable=True
            ) from None
        spec = tool.spec
        result = PreflightResult(
            approval_required=spec.approval == "conditional"
            and registry.requires_approval(spec.name, request.arguments)
        )
        # A conditional tool whose predicate asks nobody needs no summary.
        asks = spec.approval != "conditional" or result.approval_required
        if tool.approval_summary is not None and asks:
            result.summary = await summarize_call(
                spec,
                tool.approval_summary,
                request.arguments,
                runtime.secret_values(),
                threads=summary_threads,
            )
        if spec.oauth is None:
            return result
        if runtime.oauth is None:
            raise ApplicationError(
                f"tool {spec.name!r} needs OAuth ({spec.oauth.provider}) but this worker has no "
                "OAuth broker configured",
                type="OAuthNotConfigured",
                non_retryable=True,
            )
        if not request.force_reauthorization:
            result.grant_ref = await runtime.oauth.grant_ref(request.identity, spec.oauth)
        if result.grant_ref is None:
            await _authorization_link(runtime.oauth, request, spec.oauth, result)
        return result

    compact = compact_activity(snapshots, runtime.artifact_store, _heartbeating)
    return [catalog, catalog_packed, catalog_update, model, compact, preflight]
