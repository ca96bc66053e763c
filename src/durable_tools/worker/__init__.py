"""Building and running a worker from a tool registry.

`build_worker` (exported, like `DurableToolsPlugin`, by the top-level `durable_tools`) is
the plugin on a `Worker`, plus the workers of rate-limited tools; use the plugin directly in
an application's own workers.

The worker-side objects `build_worker` takes are here too: a custom OAuth broker
(`AuthorizationBroker`, `oauth=`), evaluators (`Evaluator`, `evaluators=`) and the
identity-grant store (`GrantStore`, `grant_store=`), per-model rate limits
(`ModelLimits`, `model_limits=`), and per-turn tool selectors (`ToolSelector`, which gets a
`ToolSelection`; `tool_selectors=`). A project file (`load_project`) configures the
same from TOML: sources, limits and policy, for the CLI's `--project` and
`Project.plugin()`.
"""

from durable_tools._activities import AuthorizationBroker, Evaluator, GrantStore
from durable_tools.protocol._models import ModelLimits
from durable_tools.workflows.catalog._selection import ToolSelection, ToolSelector

from ._build import (
    DEFAULT_TASK_QUEUE,
    SECRET_ENV_PREFIX,
    build_worker as build_worker,
    load_registry,
    secrets_from_env,
    task_queue_from_env,
)
from ._deployment import deployment_version
from ._limited import ToolWorker
from ._missing import missing_extras
from ._project import MAX_PROJECT_BYTES, PROJECT_ENV, Project, ProjectError, load_project
from ._sandbox import PASSTHROUGH_MODULES, STRICT_SANDBOX_ENV, passthrough_modules, workflow_runner

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "MAX_PROJECT_BYTES",
    "PASSTHROUGH_MODULES",
    "PROJECT_ENV",
    "SECRET_ENV_PREFIX",
    "STRICT_SANDBOX_ENV",
    "AuthorizationBroker",
    "Evaluator",
    "GrantStore",
    "ModelLimits",
    "Project",
    "ProjectError",
    "ToolSelection",
    "ToolSelector",
    "ToolWorker",
    "deployment_version",
    "load_project",
    "load_registry",
    "missing_extras",
    "passthrough_modules",
    "secrets_from_env",
    "task_queue_from_env",
    "workflow_runner",
]
