"""A flow is checked when it is registered: each wrong flow fails with a message naming
the flow and the node, before any run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from durable_tools import OAuthRequirement, ToolRegistrationError, ToolRegistry
from durable_tools.flows import FlowNode, FlowPlan


class Place(BaseModel):
    name: str
    lat: float


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def geocode(city: str) -> Place:
        """Find a city."""
        return Place(name=city, lat=1.0)

    @tools.tool(read_only=True)
    def count(n: int) -> int:
        """Count to n."""
        return n

    @tools.tool(redact=["token"], spends_money=True)
    def charge(amount: float, token: str = "") -> str:
        """Charge an amount."""
        return "ok"

    @tools.tool(approval=True)
    def publish(text: str) -> str:
        """Publish a text."""
        return text

    @tools.tool(oauth=OAuthRequirement(provider="github"))
    def star(repo: str) -> str:
        """Star a repository."""
        return repo

    return tools


def refused(nodes: dict[str, Any], **options: Any) -> str:
    with pytest.raises(ToolRegistrationError) as caught:
        registry().flow("pipeline", "A pipeline.", nodes=nodes, **options)
    assert caught.value.rule == "flow" and caught.value.tool_name == "pipeline"
    return str(caught.value)


def test_a_cycle_is_refused_naming_its_nodes() -> None:
    message = refused(
        {
            "a": FlowNode(tool="count", arguments={"n": "$nodes.b.output"}),
            "b": FlowNode(tool="count", arguments={"n": "$nodes.a.output"}),
        }
    )
    assert "cycle" in message and ("a -> b -> a" in message or "b -> a -> b" in message)


def test_a_cycle_through_an_explicit_edge_is_refused() -> None:
    message = refused(
        {
            "a": FlowNode(tool="count", arguments={"n": 1}),
            "b": FlowNode(tool="count", arguments={"n": "$nodes.a.output"}),
        },
        edges=[("b", "a")],
    )
    assert "cycle" in message


def test_an_unknown_tool_is_refused_naming_the_node() -> None:
    message = refused({"fetch": FlowNode(tool="no_such_tool")})
    assert "node 'fetch'" in message and "unknown tool 'no_such_tool'" in message


def test_a_type_mismatch_is_refused_naming_the_node_and_the_types() -> None:
    message = refused(
        {
            "geo": FlowNode(tool="geocode", arguments={"city": "Paris"}),
            "n": FlowNode(tool="count", arguments={"n": "$nodes.geo.output.name"}),
        }
    )
    assert "node 'n'" in message and "type mismatch" in message
    assert "$nodes.geo.output.name is string" in message and "takes integer" in message


def test_a_whole_object_output_into_a_number_is_a_mismatch() -> None:
    message = refused(
        {
            "geo": FlowNode(tool="geocode", arguments={"city": "Paris"}),
            "n": FlowNode(tool="count", arguments={"n": "$nodes.geo.output"}),
        }
    )
    assert "node 'n'" in message and "is object" in message


def test_a_number_into_an_integer_parameter_passes_to_run_time_checks() -> None:
    # A number may be integral: registration lets it through, the node's own
    # argument validation checks the value when the flow runs.
    registry().flow(
        "ok",
        "Fine.",
        nodes={
            "geo": FlowNode(tool="geocode", arguments={"city": "Paris"}),
            "n": FlowNode(tool="count", arguments={"n": "$nodes.geo.output.lat"}),
        },
    )


def test_unknown_references_are_refused_naming_the_node() -> None:
    assert "node 'n'" in refused({"n": FlowNode(tool="count", arguments={"n": "$nodes.x.output"})})
    assert "there is no node 'x'" in refused(
        {"n": FlowNode(tool="count", arguments={"n": "$nodes.x.output"})}
    )
    field = refused(
        {
            "geo": FlowNode(tool="geocode", arguments={"city": "Paris"}),
            "n": FlowNode(tool="count", arguments={"n": "$nodes.geo.output.altitude"}),
        }
    )
    assert "node 'n'" in field and "has no field 'altitude'" in field
    argument = refused(
        {"n": FlowNode(tool="count", arguments={"n": "$args.size"})},
        input_schema={"type": "object", "properties": {"count": {"type": "integer"}}},
    )
    assert "node 'n'" in argument and "input_schema has no property 'size'" in argument
    typo = refused({"n": FlowNode(tool="count", arguments={"n": "$nodes.x.outptu"})})
    assert "node 'n'" in typo and "is not a reference" in typo
    assert "a node cannot read its own output" in refused(
        {"n": FlowNode(tool="count", arguments={"n": "$nodes.n.output"})}
    )
    output = refused({"n": FlowNode(tool="count", arguments={"n": 1})}, output="missing")
    assert "output" in output and "there is no node 'missing'" in output


def test_parameters_are_checked_against_the_tool() -> None:
    unknown = refused({"n": FlowNode(tool="count", arguments={"n": 1, "m": 2})})
    assert "node 'n'" in unknown and "has no parameter 'm'" in unknown
    missing = refused({"n": FlowNode(tool="count")})
    assert "node 'n'" in missing and "needs 'n'" in missing
    literal = refused({"n": FlowNode(tool="count", arguments={"n": "three"})})
    assert "node 'n'" in literal and "does not fit tool 'count'" in literal


def test_tools_a_flow_cannot_run_are_refused() -> None:
    assert "needs an OAuth grant" in refused({"s": FlowNode(tool="star", arguments={"repo": "x"})})
    nested = registry()
    nested.flow("inner", "Inner.", nodes={"n": FlowNode(tool="count", arguments={"n": 1})})
    with pytest.raises(ToolRegistrationError, match="is a flow"):
        nested.flow("outer", "Outer.", nodes={"i": FlowNode(tool="inner")})
    nested.callback_tool("locate", description="Where the device is.")
    with pytest.raises(ToolRegistrationError, match="is a callback tool"):
        nested.flow("where", "Where.", nodes={"l": FlowNode(tool="locate")})


def test_edges_must_name_nodes() -> None:
    message = refused({"a": FlowNode(tool="count", arguments={"n": 1})}, edges=[("a", "z")])
    assert "there is no node 'z'" in message


def test_the_flow_spec_combines_its_nodes() -> None:
    tools = registry()
    tool = tools.flow(
        "pay_and_publish",
        "Charge, then publish.",
        nodes={
            "pay": FlowNode(tool="charge", arguments={"amount": "$args.amount"}),
            "post": FlowNode(tool="publish", arguments={"text": "$nodes.pay.output"}),
        },
    )
    spec = tool.spec
    assert spec.transport == "flow" and spec.flow is not None
    # Derived arguments: each takes the schema of the parameter it feeds.
    assert spec.input_schema["properties"] == {"amount": {"type": "number"}}
    assert spec.input_schema["required"] == ["amount"]
    # The flow may do whatever a node may do; a node needing approval makes it need it.
    assert spec.approval == "always"
    assert spec.safety.spends_money and not spec.safety.read_only
    assert spec.safety.redact == ("token",)
    plan = FlowPlan.model_validate(spec.flow)
    assert [n.id for n in plan.nodes] == ["pay", "post"]
    assert plan.output == "$nodes.post.output"
    assert plan.nodes[1].after == ("pay",)
    assert plan.nodes[0].passes_output and not plan.nodes[1].passes_output


def test_several_sinks_make_an_object_output() -> None:
    tool = registry().flow(
        "both",
        "Both.",
        nodes={
            "a": FlowNode(tool="count", arguments={"n": 1}),
            "b": FlowNode(tool="count", arguments={"n": 2}),
        },
    )
    assert FlowPlan.model_validate(tool.spec.flow).output == {
        "a": "$nodes.a.output",
        "b": "$nodes.b.output",
    }


def test_a_strict_tool_gets_nulls_for_the_optional_parameters_a_node_leaves_out() -> None:
    tools = registry()

    @tools.tool(strict=True, read_only=True)
    def search(query: str, limit: int = 10) -> list[str]:
        """Search."""
        return [query] * limit

    tool = tools.flow(
        "find", "Find.", nodes={"s": FlowNode(tool="search", arguments={"query": "$args.q"})}
    )
    [node] = FlowPlan.model_validate(tool.spec.flow).nodes
    assert node.arguments == {"limit": None, "query": "$args.q"}
    with pytest.raises(ToolRegistrationError, match="needs 'query'"):
        tools.flow("bad", "Bad.", nodes={"s": FlowNode(tool="search", arguments={"limit": 3})})
