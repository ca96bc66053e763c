"""Building and running a worker for a tool registry."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion

from durable_tools._activities import Evaluator, GrantStore
from durable_tools._activities._runtime import AuthorizationBroker
from durable_tools._activities._tools import HEARTBEAT_THROTTLE
from durable_tools.protocol._models import ModelLimits
from durable_tools.tools._artifacts import ArtifactStore
from durable_tools.tools._registry import ToolRegistry
from durable_tools.worker._limited import ToolWorker
from durable_tools.worker._plugin import DurableToolsPlugin
from durable_tools.workflows.catalog._selection import ToolSelector

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "SECRET_ENV_PREFIX",
    "build_worker",
    "load_registry",
    "secrets_from_env",
    "task_queue_from_env",
]

DEFAULT_TASK_QUEUE = "durable-tools"
SECRET_ENV_PREFIX = "DURABLE_TOOLS_SECRET_"


def task_queue_from_env() -> str:
    """`DURABLE_TOOLS_TASK_QUEUE`, or the default task queue."""
    return os.environ.get("DURABLE_TOOLS_TASK_QUEUE") or DEFAULT_TASK_QUEUE


def secrets_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Secrets from `DURABLE_TOOLS_SECRET_<NAME>` variables, keyed by lower-case NAME."""
    source = os.environ if environ is None else environ
    return {
        key[len(SECRET_ENV_PREFIX) :].lower(): value
        for key, value in source.items()
        if key.startswith(SECRET_ENV_PREFIX) and value
    }


def load_registry(target: str) -> ToolRegistry:
    """Import `MODULE[:ATTR]` and return its registry (attribute `registry` by default).

    The module is looked up from the current directory first, as uvicorn and celery do,
    so `--tools myapp.tools` works from the project folder without `PYTHONPATH=.`.

    Raises:
        ValueError: the module cannot be found, or the attribute is not a ToolRegistry.
        Exception: whatever the module itself raised while it was imported (its
            traceback names the user's file and line).
    """
    module_name, _, attribute = target.partition(":")
    attribute = attribute or "registry"
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise ValueError(
                f"cannot import tools module {module_name!r}: no module {error.name!r} "
                f"on the path (looked in {here} first; run from your project's folder, or "
                "install the package that holds it)"
            ) from None
        raise  # the module was found, and an import inside it failed: the user's error
    registry = getattr(module, attribute, None)
    if not isinstance(registry, ToolRegistry):
        found = type(registry).__name__ if registry is not None else "nothing"
        raise ValueError(
            f"{module_name}:{attribute} should be a ToolRegistry, found {found}; "
            "pass MODULE:ATTR to name another attribute"
        )
    return registry


def build_worker(
    client: Client,
    registry: ToolRegistry,
    *,
    task_queue: str | None = None,
    resources: Mapping[str, Any] | None = None,
    secrets: Mapping[str, str] | None = None,
    artifact_store: ArtifactStore | None = None,
    oauth: AuthorizationBroker | None = None,
    evaluators: Mapping[str, Evaluator] | None = None,
    grant_store: GrantStore | None = None,
    deployment_version: WorkerDeploymentVersion | None = None,
    model_limits: Mapping[str, ModelLimits] | None = None,
    require_identity: bool = False,
    tool_selectors: Mapping[str, ToolSelector] | None = None,
    **worker_options: Any,
) -> ToolWorker:
    """A worker that runs the agent workflow, its core activities and one activity per tool.

    It is a `temporalio.worker.Worker` with a `DurableToolsPlugin(registry, ...)` (which
    adds the workflow, the activities and the sandbox pass-through), plus the workers of the
    rate-limited tools that a plugin cannot add. To add durable-tools to a client and
    workers of your own instead, use `DurableToolsPlugin` directly.

    A tool with `max_concurrent` or `rate_limit` runs on a task queue of its own
    (`<task_queue>.tool.<name>`, or its explicit `task_queue`): the returned worker also
    runs one worker per such queue, with `max_concurrent_activities=max_concurrent` and
    `max_task_queue_activities_per_second=rate_limit`, and starts and stops them with itself.

    Args:
        client: A client made with the pydantic data converter (see
            `durable_tools.connect`).
        registry: The tools this worker runs.
        task_queue: Defaults to `DURABLE_TOOLS_TASK_QUEUE` or `durable-tools`.
        resources: Worker-side objects handed to tools by name.
        secrets: Worker-side secrets handed to tools by name; never enter history.
        artifact_store: Where large outputs go (default: the filesystem store).
        oauth: The OAuth broker for tools that declare an OAuth requirement.
        evaluators: Auto-mode approval evaluators by name (see `ApprovalPolicy.auto`).
        grant_store: Where identity-scoped standing grants live (default: a JSON file
            under `DURABLE_TOOLS_HOME`).
        deployment_version: Make this a versioned worker of that Worker Deployment Version
            (see `DurableToolsPlugin` and docs/operations.md).
        model_limits: Requests and tokens a minute by model spec, held across the
            deployment (see `DurableToolsPlugin` and docs/models.md, "Rate limits").
        require_identity: Refuse runs whose identity names no user or no tenant (see
            `DurableToolsPlugin`).
        tool_selectors: Per-turn tool selectors by name, for runs whose
            `AgentConfig.tool_selector` names one (see `DurableToolsPlugin`).
        **worker_options: Passed to `temporalio.worker.Worker` (e.g. `max_cached_workflows`,
            `plugins`).

    Raises:
        ValueError: the client already carries a `DurableToolsPlugin`; a limited tool's
            queue is the main queue; tools sharing a queue declare different limits.
    """
    if any(isinstance(plugin, DurableToolsPlugin) for plugin in client.config()["plugins"]):
        raise ValueError(
            "this client already carries a DurableToolsPlugin, which gives every worker built "
            "from it the agent workflow and tools: build the worker with temporalio's Worker "
            "(and plugin.limited_workers for rate-limited tools), or build_worker from a client "
            "without the plugin"
        )
    plugin = DurableToolsPlugin(
        registry,
        resources=resources,
        secrets=secrets,
        artifact_store=artifact_store,
        oauth=oauth,
        evaluators=evaluators,
        grant_store=grant_store,
        heartbeat_throttle=None,  # an explicit worker option wins, as it always did
        deployment_version=deployment_version,
        model_limits=model_limits,
        require_identity=require_identity,
        tool_selectors=tool_selectors,
    )
    worker_options.setdefault("default_heartbeat_throttle_interval", HEARTBEAT_THROTTLE)
    queue = task_queue or task_queue_from_env()
    limited = plugin.limited_workers(client, queue, **worker_options)
    plugins = [plugin, *worker_options.pop("plugins", ())]
    return ToolWorker(client, limited=limited, task_queue=queue, plugins=plugins, **worker_options)
