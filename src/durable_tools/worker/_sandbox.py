"""The workflow sandbox, configured for durable-tools.

The sandbox re-imports a workflow's modules for every run so that workflow code stays
deterministic: inside it, `datetime.now`, `random`, file and network I/O are restricted,
and each run gets fresh module globals. That re-import is not free: for the
`durable_tools.workflows` package (about 40 modules) it costs a worker about 100 ms of CPU
per run (measured with `Replayer`, docs/benchmarks.md), which on a 5-call run is more CPU
than the run's tool calls and model turns together.

So a worker runs the project's own workflow code passed through the sandbox (imported
once, shared by every run), as Temporal's docs advise for deterministic modules that keep
no mutable global state: durable-tools' workflow modules hold none (only constants). The
sandbox stays on for everything else in the worker, users' own workflows included.

The checks are not dropped, they move to where the code changes: with
`DURABLE_TOOLS_STRICT_SANDBOX=1` (or `workflow_runner(strict=True)`), only the data
modules pass through and the workflow code is re-imported and checked in every run, as
before. The project's CI runs its workflow tests that way (`make test-sandbox`), so a
non-deterministic call in durable-tools' workflow code fails there, not in production.

Data modules (messages, tool specs, activity and run types) always pass through: a model
class imported twice is two classes, and pydantic then refuses an instance of one where
the other is expected.

The runner is also cheaper per payload than the SDK's (`ContextLookupRunner`): for every
payload of every activation and completion, the SDK asks the run's sandbox which
serialization context applies (the workflow's, or the activity's a command schedules) by
compiling and running a line of code inside it, under its import hooks: about a third of
the Python CPU of a tool call (docs/benchmarks.md). The answer is a lookup in the run's
own tables, with no import and no workflow code, so this runner asks the sandboxed
instance directly; the sandbox still runs every activation, as before.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import temporalio.converter
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.worker.workflow_sandbox._runner import _Instance

__all__ = [
    "PASSTHROUGH_MODULES",
    "STRICT_SANDBOX_ENV",
    "WORKFLOW_CODE_MODULES",
    "ContextLookupRunner",
    "passthrough_modules",
    "strict_sandbox",
    "workflow_runner",
]

_IN_SANDBOX = "__temporal_in_sandbox"
"""The name the SDK's sandbox gives the run's instance inside it (`_Instance._create_instance`)."""


class _ContextLookupInstance(_Instance):
    """The SDK's sandboxed run, answering serialization-context questions directly.

    `get_serialization_context` and `get_external_store_context` read the run's pending
    commands and its info, nothing else: asked of the instance inside the sandbox without
    compiling code and entering the import hooks, they return the same objects. Should an
    SDK version keep the instance elsewhere, the SDK's own way is used.
    """

    def get_serialization_context(
        self, command_info: Any
    ) -> temporalio.converter.SerializationContext | None:
        inner: Any = self.globals_and_locals.get(_IN_SANDBOX)
        if inner is None:
            return super().get_serialization_context(command_info)
        context: temporalio.converter.SerializationContext | None
        context = inner.get_serialization_context(command_info)
        return context

    def get_external_store_context(self, command_info: Any) -> Any:
        inner: Any = self.globals_and_locals.get(_IN_SANDBOX)
        if inner is None:
            return super().get_external_store_context(command_info)
        return inner.get_external_store_context(command_info)


@dataclasses.dataclass(frozen=True)
class ContextLookupRunner(SandboxedWorkflowRunner):
    """`SandboxedWorkflowRunner` whose runs answer serialization-context lookups directly
    (see the module's docstring): the same sandbox, without its per-payload cost."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _ContextLookupInstance(det, self.runner_class, self.restrictions)


PASSTHROUGH_MODULES = (
    "durable_tools.messages",
    "durable_tools.tools",
    "durable_tools._activities",
    "durable_tools.models",
    "durable_tools.search_attributes",
    "durable_tools.streaming",
    "durable_tools.protocol",
    "durable_tools.policy",
    "durable_tools.workflows.catalog._tool_search",
    "jsonschema",
    "httpx",
)
"""Modules imported once, outside the sandbox, and shared by every workflow run, always."""

WORKFLOW_CODE_MODULES = ("durable_tools",)
"""The project's workflow code, passed through too unless the sandbox is strict."""

STRICT_SANDBOX_ENV = "DURABLE_TOOLS_STRICT_SANDBOX"
"""Set to 1 to re-import and check durable-tools' workflow code in every run."""


def strict_sandbox() -> bool:
    """Whether `DURABLE_TOOLS_STRICT_SANDBOX` asks for the strict sandbox."""
    return os.environ.get(STRICT_SANDBOX_ENV, "").strip().lower() not in ("", "0", "false", "no")


def passthrough_modules(*, strict: bool | None = None) -> tuple[str, ...]:
    """The modules a worker's sandbox passes through.

    Args:
        strict: Keep durable-tools' workflow code inside the sandbox (checked and
            re-imported in every run). None reads `DURABLE_TOOLS_STRICT_SANDBOX`.
    """
    if strict is None:
        strict = strict_sandbox()
    return PASSTHROUGH_MODULES if strict else PASSTHROUGH_MODULES + WORKFLOW_CODE_MODULES


def workflow_runner(*, strict: bool | None = None) -> SandboxedWorkflowRunner:
    """The sandboxed runner every worker (and replayer) of the agent workflow should use.

    Args:
        strict: See `passthrough_modules`.
    """
    return ContextLookupRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(
            *passthrough_modules(strict=strict)
        )
    )
