"""Checking a flow at registration and turning it into the plan the workflow runs.

Everything that can be known before a run is checked here, so a wrong flow fails the
worker's start-up, never a run: node ids, unknown tools, unknown parameters, missing
required ones, malformed or dangling references, cycles, and types that cannot line up
(the JSON Schema type of a source, a flow argument or an earlier node's output or field,
against the schema of the parameter it feeds). Every message names the flow and the node.
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from durable_tools.tools._flow_arguments import (
    Use,
    check_types,
    flow_error,
    input_schema_for,
    output_schema_of,
    walk_arguments,
    with_strict_nulls,
)
from durable_tools.tools._flow_json import MISSING, JsonSchema, field_schema
from durable_tools.tools._flow_model import (
    MAX_NODES,
    NODE_ID,
    FlowNode,
    FlowPlan,
    PlannedNode,
    parse_reference,
)
from durable_tools.tools._registered import RegisteredTool
from durable_tools.tools._spec import Safety, SideEffect

__all__ = ["FlowBlueprint", "plan_flow"]

_REACH: tuple[SideEffect, ...] = ("none", "internal", "external", "irreversible")


@dataclass(frozen=True)
class FlowBlueprint:
    """A validated flow: its plan, and what the flow tool's spec derives from its nodes."""

    plan: FlowPlan
    input_schema: JsonSchema
    safety: Safety
    """The nodes' safety, combined: the flow may do whatever any node may do."""
    needs_approval: bool
    """Some node's tool asks a person before it runs, so the flow call does."""
    auth_scopes: tuple[str, ...]
    """Every scope any node's tool needs: a run that cannot see a node cannot run it."""
    node_tools: tuple[RegisteredTool, ...] = field(default=())


def _node_model(flow: str, node_id: str, node: Any) -> FlowNode:
    if isinstance(node, FlowNode):
        return node
    try:
        return FlowNode.model_validate(node)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "node"
        raise flow_error(flow, f"node {node_id!r}: {where}: {first['msg']}") from None


def _check_tool(
    flow: str, node_id: str, tool_name: str, tools: Mapping[str, RegisteredTool]
) -> RegisteredTool:
    tool = tools.get(tool_name)
    if tool is None:
        raise flow_error(
            flow, f"node {node_id!r}: unknown tool {tool_name!r}; register it before the flow"
        )
    spec = tool.spec
    why = None
    if spec.flow is not None:
        why = "is a flow (flows do not nest)"
    elif spec.subagent is not None:
        why = "is a sub-agent (a child agent run, not an activity)"
    elif spec.callback:
        why = "is a callback tool (a client attached to the run answers it, not a worker)"
    elif spec.oauth is not None:
        why = "needs an OAuth grant, which a flow's nodes cannot ask the user for"
    elif spec.policy.max_calls_per_run is not None:
        why = "has a per-run call budget (max_calls_per_run), which a flow cannot count"
    if why is not None:
        raise flow_error(flow, f"node {node_id!r}: tool {tool_name!r} {why}")
    return tool


def _combined_safety(tools: Iterable[RegisteredTool]) -> Safety:
    specs = [t.spec.safety for t in tools]
    reach = max((_REACH.index(s.side_effect) for s in specs), default=0)
    return Safety(
        read_only=all(s.read_only for s in specs),
        idempotent=all(s.safe_to_repeat for s in specs),
        networked=any(s.networked for s in specs),
        filesystem=any(s.filesystem for s in specs),
        shell=any(s.shell for s in specs),
        spends_money=any(s.spends_money for s in specs),
        requires_confirmation=any(s.requires_confirmation for s in specs),
        redact=tuple(sorted({name for s in specs for name in s.redact})),
        side_effect=_REACH[reach],
    )


def _order(flow: str, after: dict[str, set[str]]) -> list[str]:
    sorter = graphlib.TopologicalSorter(after)
    try:
        return list(sorter.static_order())
    except graphlib.CycleError as exc:
        cycle = list(reversed(exc.args[1]))
        raise flow_error(flow, f"nodes form a cycle: {' -> '.join(cycle)}") from None


def _output_references(
    flow: str, output: str | Mapping[str, str] | None, sinks: list[str]
) -> str | dict[str, str]:
    def as_reference(value: Any, where: str) -> str:
        if isinstance(value, str) and NODE_ID.match(value):
            return f"$nodes.{value}.output"
        try:
            reference = parse_reference(value)
        except ValueError as exc:
            raise flow_error(flow, f"output {where}: {exc}") from None
        if reference is None or reference.node is None:
            raise flow_error(
                flow, f"output {where}: give a node id or a $nodes.NODE.output reference"
            )
        return str(value)

    if output is None:
        if len(sinks) == 1:
            return f"$nodes.{sinks[0]}.output"
        return {sink: f"$nodes.{sink}.output" for sink in sinks}
    if isinstance(output, str):
        return as_reference(output, repr(output))
    return {str(key): as_reference(value, repr(key)) for key, value in output.items()}


def plan_flow(
    name: str,
    *,
    nodes: Mapping[str, FlowNode | Mapping[str, Any]],
    edges: Iterable[tuple[str, str]],
    tools: Mapping[str, RegisteredTool],
    input_schema: Mapping[str, Any] | None,
    output: str | Mapping[str, str] | None,
    timeout_seconds: float,
    node_output_limit_bytes: int,
) -> FlowBlueprint:
    """Validate a flow and build its plan.

    Args:
        name: The flow tool's name.
        nodes: Node id -> `FlowNode` (or its dict form).
        edges: Extra `(before, after)` orderings between nodes that pass no data.
        tools: The registered tools, by name.
        input_schema: The flow's arguments; None derives it from the `$args` references.
        output: What the model sees (see `ToolRegistry.flow`).
        timeout_seconds: The flow's overall bound.
        node_output_limit_bytes: Largest output a node may pass on.

    Raises:
        ToolRegistrationError: with `rule="flow"` and a message naming the node.
    """
    if not nodes:
        raise flow_error(name, "a flow needs at least one node")
    if len(nodes) > MAX_NODES:
        raise flow_error(name, f"{len(nodes)} nodes, more than the {MAX_NODES} a flow may have")
    models: dict[str, FlowNode] = {}
    node_tools: dict[str, RegisteredTool] = {}
    uses: list[Use] = []
    for node_id, raw in nodes.items():
        if not isinstance(node_id, str) or not NODE_ID.match(node_id):
            raise flow_error(name, f"node id {node_id!r} must match {NODE_ID.pattern}")
        node = _node_model(name, node_id, raw)
        tool = _check_tool(name, node_id, node.tool, tools)
        node = node.model_copy(update={"arguments": with_strict_nulls(tool, node.arguments)})
        models[node_id], node_tools[node_id] = node, tool
        uses += walk_arguments(name, node_id, tool, node.arguments)

    after: dict[str, set[str]] = {node_id: set() for node_id in models}
    for use in uses:
        source = use.reference.node
        if source is None:
            continue
        if source not in models:
            raise flow_error(
                name,
                f"node {use.node!r}, {use.where}: unknown reference {use.reference}: "
                f"there is no node {source!r}",
            )
        if source == use.node:
            raise flow_error(
                name, f"node {use.node!r}, {use.where}: a node cannot read its own output"
            )
        after[use.node].add(source)
    for pair in edges:
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise flow_error(name, f"edge {pair!r} is not a (before, after) pair of node ids")
        before, then = pair
        for end in (before, then):
            if end not in models:
                raise flow_error(name, f"edge {before!r} -> {then!r}: there is no node {end!r}")
        if before == then:
            raise flow_error(name, f"edge {before!r} -> {then!r}: a node cannot wait for itself")
        after[then].add(before)
    order = _order(name, after)

    arguments_schema = input_schema_for(name, input_schema, uses)
    outputs = {node_id: output_schema_of(tool) for node_id, tool in node_tools.items()}
    for use in uses:
        check_types(name, use, arguments_schema, outputs)

    read_by_others = {use.reference.node for use in uses if use.reference.node is not None}
    sinks = [n for n in order if not any(n in deps for deps in after.values())]
    plan_output = _output_references(name, output, sinks)
    output_refs = [plan_output] if isinstance(plan_output, str) else list(plan_output.values())
    passes = set(read_by_others)
    for text in output_refs:
        reference = parse_reference(text)
        assert reference is not None and reference.node is not None
        if reference.node not in models:
            raise flow_error(
                name, f"output: unknown reference {text}: there is no node {reference.node!r}"
            )
        found = field_schema(outputs[reference.node], reference.path)
        if found is MISSING:
            raise flow_error(
                name, f"output: unknown reference {text}: the node's output has no such field"
            )
        if reference.path or not isinstance(plan_output, str):
            passes.add(reference.node)

    planned = tuple(
        PlannedNode(
            id=node_id,
            spec=_node_spec(node_tools[node_id], models[node_id]),
            arguments=dict(models[node_id].arguments),
            after=tuple(sorted(after[node_id])),
            passes_output=node_id in passes,
        )
        for node_id in order
    )
    plan = FlowPlan(
        name=name,
        nodes=planned,
        output=plan_output,
        timeout_seconds=timeout_seconds,
        node_output_limit_bytes=node_output_limit_bytes,
    )
    unique = list({t.spec.name: t for t in node_tools.values()}.values())
    return FlowBlueprint(
        plan=plan,
        input_schema=arguments_schema,
        safety=_combined_safety(unique),
        needs_approval=any(t.spec.approval != "never" for t in unique),
        auth_scopes=tuple(sorted({s for t in unique for s in t.spec.auth_scopes})),
        node_tools=tuple(unique),
    )


def _node_spec(tool: RegisteredTool, node: FlowNode) -> Any:
    if node.policy is None:
        return tool.spec
    return tool.spec.model_copy(update={"policy": node.policy})
