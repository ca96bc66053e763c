"""The Temporal plugin behind `durable_tools.DurableToolsPlugin` and `build_worker`.

On the client it sets the data converter: pydantic payload conversion, composed with a
`payload_codec` if one is given (the client's other converter choices are kept). On each
worker built from that client (and each replayer) it adds the agent workflow; the
catalog, model, preflight, evaluator, grant and notification activities; one activity per
tool, and the dynamic activity serving tools registered while the worker runs; the
sandbox pass-through of the project's modules (`_sandbox.py`; added to whatever sandboxed
runner the worker has, so another plugin's pass-through, e.g. OpenTelemetry's, stays);
lowers the heartbeat throttle so cancelling a tool reaches it within ~2 s; unless
given slots or a tuner, takes at most `WORKFLOW_TASK_SLOTS` workflow tasks at once; and,
given a `deployment_version`, makes the worker a versioned one (`_deployment.py`).

Tools with `max_concurrent` or `rate_limit` run on task queues of their own, served by
extra workers that a plugin cannot add: `build_worker` runs them beside the main worker
(it is this plugin plus those workers); with a plain `Worker`, run
`plugin.limited_workers(client, task_queue)` beside it. Given `model_limits`, those
workers include one for the model limiters' own task queue (without it, the limiters run
on the runs' queue, where under load their leases wait behind the runs' workflow tasks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.converter import DataConverter, PayloadCodec
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker, WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

if TYPE_CHECKING:
    from durable_tools.sources import ProviderRefresher

from durable_tools._activities import (
    Evaluator,
    GrantStore,
    ToolRuntime,
    core_activities,
    evaluate_activity,
    grant_activities,
    make_tool_activity,
    notify_activity,
)
from durable_tools._activities._callback import callback_result_activity
from durable_tools._activities._model_limits import ModelLimiter
from durable_tools._activities._runtime import AuthorizationBroker
from durable_tools._activities._script import script_activity
from durable_tools._activities._tools import HEARTBEAT_THROTTLE
from durable_tools._data_converter import with_durable_conversion
from durable_tools.flows import FlowWorkflow
from durable_tools.protocol._limiter import limiter_task_queue
from durable_tools.protocol._models import ModelLimits, checked_model_limits
from durable_tools.tools._artifacts import ArtifactStore, default_artifact_store
from durable_tools.tools._registry import ToolRegistry
from durable_tools.worker._deployment import deployment_version as checked_version, versioned
from durable_tools.worker._limited import limited_workers
from durable_tools.worker._sandbox import (
    ContextLookupRunner,
    passthrough_modules,
    workflow_runner,
)
from durable_tools.worker._selectors import ToolSelectorsInterceptor
from durable_tools.workflows import AgentWorkflow
from durable_tools.workflows.catalog._selection import ToolSelector
from durable_tools.workflows.limiter._model_limiter import ModelLimiterWorkflow
from durable_tools.workflows.loop._token_stream import TokenStreamWorkflow

__all__ = ["PLUGIN_NAME", "WORKFLOW_TASK_SLOTS", "DurableToolsPlugin"]

PLUGIN_NAME = "durable_tools.DurableToolsPlugin"

WORKFLOW_TASK_SLOTS = 10
"""Default `max_concurrent_workflow_tasks` (the SDK's is 100).

A Python worker runs its workflow tasks under one GIL, and a run's first task (or its first
after an eviction) re-imports the workflow modules in the sandbox on the event loop: 0.1-0.3
s each on a loaded 2-core machine. Each task the worker holds runs down its 10 s timeout:
holding 100, the last ones timed out, their completions were rejected, the runs were evicted
and replayed, and 200 runs started at once never got past their first turn (issue #15).
Tasks beyond the slots wait on the server, where no start-to-close clock runs."""

# Options of the main worker that the model limiters' worker keeps.
_LIMITER_OPTIONS = ("deployment_config", "max_cached_workflows", "debug_mode", "identity")

# Set while the limited tools' workers are built: they serve one tool each, so the
# plugin (which their client may carry) must not add the workflow and every activity.
_BUILDING_LIMITED: ContextVar[bool] = ContextVar("durable_tools_building_limited", default=False)


@contextmanager
def _building_limited() -> Iterator[None]:
    token = _BUILDING_LIMITED.set(True)
    try:
        yield
    finally:
        _BUILDING_LIMITED.reset(token)


def _with_passthrough(existing: WorkflowRunner | None) -> WorkflowRunner:
    """The worker's runner, passing the project's modules through its sandbox (`_sandbox.py`)."""
    if existing is None:
        return workflow_runner()
    if isinstance(existing, SandboxedWorkflowRunner):
        restrictions = existing.restrictions.with_passthrough_modules(*passthrough_modules())
        if type(existing) is SandboxedWorkflowRunner:  # the SDK's own: same, cheaper lookups
            return ContextLookupRunner(restrictions, existing.runner_class)
        return dataclasses.replace(existing, restrictions=restrictions)
    return existing  # unsandboxed: nothing is re-imported, nothing to pass through


class DurableToolsPlugin(SimplePlugin):
    """durable-tools as a Temporal client and worker plugin.

    Args:
        registry: The tools the workers run.
        resources: Worker-side objects handed to tools by name.
        secrets: Worker-side secrets handed to tools by name; never enter history.
        artifact_store: Where large outputs go (default: the filesystem store).
        oauth: The OAuth broker for tools that declare an OAuth requirement.
        evaluators: Auto-mode approval evaluators by name (see `ApprovalPolicy.auto`).
        grant_store: Where identity-scoped standing grants live (default: a JSON file
            under `DURABLE_TOOLS_HOME`).
        payload_codec: Encodes every payload (e.g. encryption) before it leaves the
            process; composed into the client's data converter.
        heartbeat_throttle: The most a worker's `default_heartbeat_throttle_interval` may
            be (a cancel waits up to this long to reach a tool); None leaves it alone.
        deployment_version: Run versioned workers of this Worker Deployment Version
            (deployment name and build id): runs are pinned to the build they start on
            unless their `AgentConfig.versioning` says otherwise (docs/operations.md). A
            worker given its own `deployment_config` keeps it.
        model_limits: Requests and tokens a minute by model spec (as runs name it, e.g.
            `"openai:gpt-4.1"`), held across every worker of the task queue by a limiter
            workflow per model (docs/models.md, "Rate limits"); give every worker the same.
            Run `limited_workers` beside a plain `Worker` (`build_worker` does): one of
            them serves the limiters' own task queue.
        require_identity: Refuse, at its first step, a run whose identity names no user
            or no tenant (so catalogs, grants and OAuth tokens are always scoped); the
            run fails with `IdentityIncomplete` naming what is missing. Give every worker
            of the task queue the same.
        tool_selectors: Per-turn tool selectors by name (`ToolSelector`): a run whose
            `AgentConfig.tool_selector` names one is offered, at each model turn, only the
            tools it chooses. They run in workflow code: deterministic functions of the
            `ToolSelection` they get. Give every worker of the task queue the same.
        refreshers: `ProviderRefresher`s run while each worker of the plugin runs (their
            scheduled reads of OpenAPI documents and A2A cards start with the first worker
            and stop with the last); `Project.plugin()` passes the project's.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        resources: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        artifact_store: ArtifactStore | None = None,
        oauth: AuthorizationBroker | None = None,
        evaluators: Mapping[str, Evaluator] | None = None,
        grant_store: GrantStore | None = None,
        payload_codec: PayloadCodec | None = None,
        heartbeat_throttle: timedelta | None = HEARTBEAT_THROTTLE,
        deployment_version: WorkerDeploymentVersion | None = None,
        model_limits: Mapping[str, ModelLimits] | None = None,
        require_identity: bool = False,
        tool_selectors: Mapping[str, ToolSelector] | None = None,
        refreshers: Sequence[ProviderRefresher] = (),
    ) -> None:
        self.registry = registry
        self.refreshers = tuple(refreshers)
        self.model_limits = checked_model_limits(model_limits or {})
        self.deployment_version = (
            None
            if deployment_version is None
            else checked_version(deployment_version.deployment_name, deployment_version.build_id)
        )
        self.payload_codec = payload_codec
        self.heartbeat_throttle = heartbeat_throttle
        self.runtime = ToolRuntime(
            registry=registry,
            resources=dict(resources or {}),
            secrets=dict(secrets or {}),
            artifact_store=artifact_store or default_artifact_store(),
            oauth=oauth,
            required_identity=("user", "tenant") if require_identity else (),
        )
        self._model_limiter = ModelLimiter(self.model_limits) if self.model_limits else None
        # Sub-agents run as child workflows, not activities. A limited tool stays
        # registered on the main queue too, so a call scheduled there before the tool got
        # its limits still finds a worker.
        self._tools = [
            tool
            for tool in registry.tools()
            if tool.spec.subagent is None and not tool.spec.callback  # a client runs these
        ]
        # Serves tools registered while the worker runs (an MCP server's new tools, after
        # `list_changed`). Imported here, on the worker: the sources package pulls in HTTP
        # libraries that a workflow sandbox importing this module must not see.
        from durable_tools.sources._mcp_activity import late_tools_activity

        activities = [
            *core_activities(self.runtime, model_limiter=self._model_limiter),
            late_tools_activity(self.runtime),
            evaluate_activity(evaluators or {}),
            *grant_activities(grant_store or GrantStore()),
            notify_activity(self.runtime),
            callback_result_activity(self.runtime),
            script_activity(self.runtime),
            *(make_tool_activity(tool, self.runtime) for tool in self._tools),
        ]
        super().__init__(
            PLUGIN_NAME,
            data_converter=self._data_converter,
            workflows=[AgentWorkflow, TokenStreamWorkflow, FlowWorkflow, ModelLimiterWorkflow],
            activities=activities,
            workflow_runner=_with_passthrough,
            interceptors=[ToolSelectorsInterceptor(tool_selectors)] if tool_selectors else None,
            run_context=self._refreshing if self.refreshers else None,
        )

    @asynccontextmanager
    async def _refreshing(self) -> AsyncIterator[None]:
        """The refreshers' schedules, for as long as a worker of the plugin runs."""
        async with AsyncExitStack() as stack:
            for refresher in self.refreshers:
                await stack.enter_async_context(refresher)
            yield

    def _data_converter(self, existing: DataConverter | None) -> DataConverter:
        return with_durable_conversion(existing, self.payload_codec)

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Add the workflow, activities, pass-through and defaults (not to a limited tool's)."""
        if _BUILDING_LIMITED.get():
            return config
        config = super().configure_worker(config)
        if config.get("max_concurrent_workflow_tasks") is None and config.get("tuner") is None:
            config["max_concurrent_workflow_tasks"] = WORKFLOW_TASK_SLOTS
        current = config.get("default_heartbeat_throttle_interval")
        if self.heartbeat_throttle is not None and (
            current is None or current > self.heartbeat_throttle
        ):
            config["default_heartbeat_throttle_interval"] = self.heartbeat_throttle
        if self.deployment_version is not None and config.get("deployment_config") is None:
            config["deployment_config"] = versioned(self.deployment_version)
        return config

    def limited_workers(
        self, client: Client, task_queue: str, **worker_options: Any
    ) -> list[Worker]:
        """The workers of the tools with `max_concurrent`/`rate_limit`, one per queue, and
        of the model limiters' queue when the plugin has `model_limits`.

        Run them beside the main worker of `task_queue` (`build_worker` does). Main-queue
        options (workflow runner, cache sizes, task-queue rate) are dropped; each worker
        gets its tools' limits.

        Args:
            client: The client the main worker uses.
            task_queue: The main worker's (the runs') task queue.
            **worker_options: As for the main `Worker`.

        Raises:
            ValueError: a limited tool's queue is the main queue, or tools sharing a queue
                declare different limits.
        """
        options = dict(worker_options)
        if self.heartbeat_throttle is not None:
            options.setdefault("default_heartbeat_throttle_interval", self.heartbeat_throttle)
        if self.deployment_version is not None:
            # In the same version as the main worker: a pinned run's tools run on its build.
            options.setdefault("deployment_config", versioned(self.deployment_version))
        activity_for: Callable[..., Any] = lambda tool: make_tool_activity(tool, self.runtime)  # noqa: E731
        with _building_limited():
            workers = limited_workers(client, self._tools, task_queue, activity_for, options)
            if self._model_limiter is not None:
                workers.append(self._limiter_worker(client, task_queue, options))
        return workers

    def _limiter_worker(
        self, client: Client, task_queue: str, options: Mapping[str, Any]
    ) -> Worker:
        """The worker of the model limiters' own queue (`limiter_task_queue`): their
        leases then never wait behind the runs' workflow tasks. From now on this worker's
        model calls start their limiters there."""
        assert self._model_limiter is not None
        self._model_limiter.own_queue = True
        kept = {key: options[key] for key in _LIMITER_OPTIONS if key in options}
        return Worker(
            client,
            task_queue=limiter_task_queue(task_queue),
            workflows=[ModelLimiterWorkflow],
            workflow_runner=_with_passthrough(options.get("workflow_runner")),
            **kept,
        )
