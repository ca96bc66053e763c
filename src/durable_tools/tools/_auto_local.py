"""The automatic choice between a local and a regular activity (`local=None`, the default).

A local activity skips the task queue and the server round trips of a regular one (about
a third fewer history events, and the fastest tool call Temporal offers), but it gives up
four things, so the registry chooses it only for tools that need none of them:

- *at-most-once effects*: a local activity whose worker dies after the tool body returned
  but before the workflow task completed runs again. Only a tool that changes nothing
  (`read_only=True`) may be repeated without asking.
- *heartbeats and progress*: a local activity cannot heartbeat, so progress reports and
  heartbeat details are lost. A tool declares that it may use them by taking a
  `ToolContext` (schema tools always take one), or by setting `heartbeat_timeout`.
- *its own task queue*: `max_concurrent`, `rate_limit` and `task_queue` route calls to
  other workers; a local activity runs on the workflow's worker.
- *a short workflow task*: a local activity runs inside a workflow task. One longer than
  the workflow task timeout (10 s by default) makes the worker heartbeat the task (three
  more events each time), and signals and updates (approvals, steering, a cancel) wait
  until the tool returns. So only tools whose attempts are bounded by
  `AUTO_LOCAL_MAX_SECONDS` (`start_to_close_timeout`) qualify; the default timeout (60 s)
  is not short, so a tool opts in by declaring a short one.

Only plain Python function tools qualify: sub-agents, flows, callback tools, OAuth tools
and MCP, HTTP and A2A tools (remote calls of unknown length) stay regular. An explicit
`local=True` or `local=False` always wins.

The choice is made once, at registration on the worker. It is then part of the spec the
catalog activity records in history, so runs replay with the choice they were made with,
whatever a later release decides.
"""

from __future__ import annotations

from ._schema import SignaturePlan
from ._spec import ToolSpec

__all__ = ["AUTO_LOCAL_MAX_SECONDS", "auto_local_refusal", "resolve_local"]

AUTO_LOCAL_MAX_SECONDS = 10.0
"""Longest `start_to_close_timeout` of a tool chosen to run as a local activity: Temporal's
default workflow task timeout, which a local activity runs inside of."""


def auto_local_refusal(spec: ToolSpec, plan: SignaturePlan) -> str | None:
    """Why the tool may not run as a local activity by default, or None when it may.

    Args:
        spec: The tool's spec (its explicit `local` is not looked at).
        plan: Its signature plan: whether it takes a `ToolContext`.
    """
    policy = spec.policy
    if not spec.safety.read_only:
        return "not read-only: a local activity may run again after a worker crash"
    if spec.transport != "function" or spec.callback or spec.subagent or spec.flow:
        return f"not a plain Python tool (transport {spec.transport})"
    if spec.oauth is not None:
        return "needs an OAuth grant"
    if any(param.source == "context" for param in plan.params):
        return "takes a ToolContext: it may report progress or heartbeat"
    if policy.heartbeat_timeout is not None:
        return "has a heartbeat timeout"
    if policy.limited:
        return "has max_concurrent or rate_limit: it needs a task queue of its own"
    if policy.task_queue is not None:
        return f"runs on task queue {policy.task_queue!r}"
    if policy.start_to_close_timeout > AUTO_LOCAL_MAX_SECONDS:
        return (
            f"start_to_close_timeout {policy.start_to_close_timeout:g} s is over "
            f"{AUTO_LOCAL_MAX_SECONDS:g} s"
        )
    return None


def resolve_local(spec: ToolSpec, plan: SignaturePlan) -> ToolSpec:
    """`spec` with `policy.local` a concrete bool: the explicit choice, else the automatic one."""
    if spec.policy.local is not None:
        return spec
    local = auto_local_refusal(spec, plan) is None
    return spec.model_copy(update={"policy": spec.policy.model_copy(update={"local": local})})
