"""The one result the model sees of a flow: a node's output, a field of it, or an object
of several, bounded like any tool's output."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from durable_tools.tools._flow_model import FlowInput, parse_reference
from durable_tools.tools._results import ArtifactRef, ToolOutcome
from durable_tools.workflows.flow._node import NodeDone
from durable_tools.workflows.flow._resolve import Unresolvable, read

__all__ = ["flow_outcome"]


def _head(text: str, budget: int) -> str:
    return text.encode("utf-8")[: max(0, budget)].decode("utf-8", "ignore")


def _bounded(text: str, limit: int, flow_run: str) -> str:
    size = len(text.encode("utf-8"))
    if size <= limit:
        return text
    notice = (
        f"\n\n[output truncated: showing the first {{shown}} of {size} bytes of the flow's "
        f"result. Each node's full output is in the flow run {flow_run}.]"
    )
    head = _head(text, limit - len(notice.encode("utf-8")) - 8)
    return head + notice.format(shown=len(head.encode("utf-8")))


def flow_outcome(
    input: FlowInput, done: Mapping[str, NodeDone], values: Mapping[str, Any], flow_run: str
) -> ToolOutcome:
    """The flow call's outcome, from its completed nodes.

    A whole node's output is that node's outcome as its tool activity formatted it (a
    large output already went to the artifact store); a field, or an object of several
    outputs, is JSON, cut to the run's output limit.

    Args:
        input: The flow's input.
        done: The completed nodes.
        values: What each completed node passes on.
        flow_run: The flow's workflow id, where every node's full outcome is kept.

    Raises:
        Unresolvable: the output names a field the node's actual output does not have.
    """
    plan = input.plan
    limit = input.output_limit_bytes
    output = plan.output
    sources: list[str] = []
    if isinstance(output, str):
        reference = parse_reference(output)
        if reference is None or reference.node is None:
            raise Unresolvable(f"{output!r} is not a node reference")
        sources.append(reference.node)
        if not reference.path:
            if reference.node not in done:
                raise Unresolvable(f"{output} names node {reference.node!r}, which has not run")
            whole = done[reference.node].outcome
            return whole.model_copy(
                update={
                    "call_id": input.call_id,
                    "tool_name": plan.name,
                    "content": _bounded(whole.content, limit, flow_run),
                    "attempt": 1,
                    "elapsed_ms": sum(d.outcome.elapsed_ms for d in done.values()),
                }
            )
        value: Any = read(reference, input.arguments, values)
    else:
        value = {}
        for key, text in output.items():
            reference = parse_reference(text)
            if reference is None or reference.node is None:
                raise Unresolvable(f"{text!r} is not a node reference")
            sources.append(reference.node)
            value[key] = read(reference, input.arguments, values)
    rendered = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    fits = len(json.dumps(value, ensure_ascii=False).encode("utf-8")) <= limit
    artifacts: list[ArtifactRef] = []
    for node in sources:  # all have run: `read` refuses a node that has not
        artifacts += [a for a in done[node].outcome.artifacts if a not in artifacts]
    return ToolOutcome(
        call_id=input.call_id,
        tool_name=plan.name,
        content=_bounded(rendered, limit, flow_run) or "(the flow's output is empty)",
        structured=value if fits and not isinstance(value, str) else None,
        artifacts=artifacts,
        elapsed_ms=sum(d.outcome.elapsed_ms for d in done.values()),
    )
