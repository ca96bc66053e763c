"""Building and running a worker from a tool registry."""

from ._build import (
    DEFAULT_TASK_QUEUE,
    SECRET_ENV_PREFIX,
    build_worker,
    load_registry,
    secrets_from_env,
    task_queue_from_env,
)
from ._limited import ToolWorker
from ._sandbox import PASSTHROUGH_MODULES, workflow_runner

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "PASSTHROUGH_MODULES",
    "SECRET_ENV_PREFIX",
    "ToolWorker",
    "build_worker",
    "load_registry",
    "secrets_from_env",
    "task_queue_from_env",
    "workflow_runner",
]
