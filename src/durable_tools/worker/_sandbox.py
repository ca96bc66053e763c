"""The workflow sandbox, configured for durable-tools.

The sandbox re-imports a workflow's modules for every run so that workflow code stays
deterministic. Our data modules (messages, tool specs, activity and run types) must not
be re-imported: a model class imported twice is two classes, and pydantic then refuses
an instance of one where the other is expected. They are plain, side-effect-free code,
so they pass through; the workflow module itself (`durable_tools.workflows._agent`)
stays sandboxed, which keeps the checks on time, randomness and I/O in workflow code.
"""

from __future__ import annotations

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

__all__ = ["PASSTHROUGH_MODULES", "workflow_runner"]

PASSTHROUGH_MODULES = (
    "durable_tools.messages",
    "durable_tools.tools",
    "durable_tools.activities",
    "durable_tools.models",
    "durable_tools.search_attributes",
    "durable_tools.streaming",
    "durable_tools.workflows._types",
    "durable_tools.workflows._limits",
    "durable_tools.workflows._callback_types",
    "durable_tools.workflows._input_types",
    "durable_tools.workflows._notification_types",
    "durable_tools.workflows._policy_types",
    "durable_tools.workflows._approvals",
    "durable_tools.workflows._options",
    "durable_tools.workflows._tool_search",
    "durable_tools.flows._model",
    "jsonschema",
    "httpx",
)
"""Modules imported once, outside the sandbox, and shared by every workflow run."""


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandboxed runner every worker (and replayer) of the agent workflow should use."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)
    )
