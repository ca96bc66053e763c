"""Options a tool kind cannot honour are refused at registration, naming the option and why;
the ones it honours are recorded in its spec; aliases are unambiguous."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from durable_tools import (
    AgentConfig,
    ExecutionPolicy,
    RetrySpec,
    ToolRegistrationError,
    ToolRegistry,
)
from durable_tools.tools._names import alias_provider

CHILD = AgentConfig(name="child", model="scripted:/nonexistent.json")
NODES = {"a": {"tool": "lookup", "arguments": {"key": "$args.key"}}}


def registry_with_a_tool() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    return registry


@pytest.mark.parametrize(
    ("options", "named", "why"),
    [
        ({"retry": RetrySpec(maximum_attempts=3)}, "retry", "would repeat every tool call"),
        ({"heartbeat_timeout": 10}, "heartbeat_timeout", "does not heartbeat"),
        ({"max_concurrent": 2}, "max_concurrent", "child workflow"),
        ({"rate_limit": 1.5}, "rate_limit", "child workflow"),
        ({"local": True}, "local", "never as a local activity"),
        # Set on a whole policy: refused the same, not lost in it.
        ({"policy": ExecutionPolicy(heartbeat_timeout=5)}, "heartbeat_timeout", "heartbeat"),
        ({"policy": ExecutionPolicy(retry=RetrySpec())}, "retry", "repeat"),
    ],
)
def test_a_subagent_refuses_what_a_child_workflow_cannot_honour(
    options: dict[str, Any], named: str, why: str
) -> None:
    with pytest.raises(ToolRegistrationError) as caught:
        ToolRegistry().subagent(CHILD, name="helper", **options)
    assert caught.value.rule == "options" and caught.value.tool_name == "helper"
    message = str(caught.value)
    assert f"sub-agent 'helper': option(s) {named}" in message and why in message


def test_a_subagent_names_every_refused_option_at_once() -> None:
    with pytest.raises(ToolRegistrationError, match="option\\(s\\) local, rate_limit cannot"):
        ToolRegistry().subagent(CHILD, name="helper", rate_limit=1, local=True)


def test_options_that_ask_for_nothing_are_not_refused() -> None:
    # What such a tool does anyway: a shared options dict may carry them.
    quiet = {"heartbeat_timeout": None, "rate_limit": None, "max_concurrent": None}
    spec = ToolRegistry().subagent(CHILD, name="helper", local=False, **quiet).spec
    assert spec.policy.heartbeat_timeout is None and spec.policy.local is False
    policy = ExecutionPolicy(heartbeat_timeout=None, local=False)
    registry_with_a_tool().flow("one", "One lookup.", nodes=NODES, policy=policy)


@pytest.mark.parametrize(
    ("options", "bound"),
    [
        ({}, None),  # no bound: a child may wait days for a person
        ({"start_to_close_timeout": 30}, 30.0),
        ({"schedule_to_close_timeout": timedelta(minutes=2)}, 120.0),
        ({"start_to_close_timeout": 30, "schedule_to_close_timeout": 20}, 20.0),
        ({"policy": ExecutionPolicy(start_to_close_timeout=45)}, 45.0),
        ({"policy": ExecutionPolicy(start_to_close_timeout=45), "start_to_close_timeout": 9}, 9.0),
    ],
)
def test_a_subagent_timeout_is_the_child_run_bound(
    options: dict[str, Any], bound: float | None
) -> None:
    spec = ToolRegistry().subagent(CHILD, name="helper", **options).spec
    assert spec.policy.schedule_to_close_timeout == bound
    if bound is not None:
        assert spec.policy.start_to_close_timeout == bound
    # The spec says how the call runs: once, never as a local activity.
    assert spec.policy.retry.maximum_attempts == 1 and spec.policy.local is False


def test_a_subagent_keeps_its_task_queue_and_budget() -> None:
    spec = (
        ToolRegistry()
        .subagent(CHILD, name="helper", task_queue="research", max_calls_per_run=2)
        .spec
    )
    assert spec.policy.task_queue == "research" and spec.policy.max_calls_per_run == 2


def test_each_subagent_has_its_own_task_schema() -> None:
    # Two registries, many sub-agents: a spec's schema edited in place (a caller adding
    # provider hints, say) must not change what any other sub-agent asks for.
    first, second = ToolRegistry(), ToolRegistry()
    helpers = [first.subagent(CHILD, name=f"helper_{i}") for i in range(50)]
    other = second.subagent(CHILD, name="helper_0")
    helpers[0].spec.input_schema["properties"]["task"]["description"] = "edited"
    helpers[0].spec.input_schema["required"].append("extra")
    for tool in [*helpers[1:], other]:
        task = tool.spec.input_schema["properties"]["task"]
        assert task["description"] == "What the sub-agent should do."
        assert tool.spec.input_schema["required"] == ["task"]


@pytest.mark.parametrize(
    "value", [math.inf, math.nan, 1e300, -1, 0, "soon", timedelta(days=365 * 11)]
)
@pytest.mark.parametrize("key", ["start_to_close_timeout", "schedule_to_close_timeout"])
def test_a_subagent_timeout_must_be_a_finite_bounded_duration(key: str, value: Any) -> None:
    with pytest.raises(ToolRegistrationError, match=key):
        ToolRegistry().subagent(CHILD, name="helper", **{key: value})


def test_a_subagent_task_queue_must_not_be_empty() -> None:
    with pytest.raises(ToolRegistrationError, match="task_queue"):
        ToolRegistry().subagent(CHILD, name="helper", task_queue="")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"start_to_close_timeout": 5}, "start_to_close_timeout"),
        ({"schedule_to_close_timeout": 5}, "schedule_to_close_timeout"),
        ({"retry": RetrySpec()}, "retry"),
        ({"heartbeat_timeout": 5}, "heartbeat_timeout"),
        ({"task_queue": "elsewhere"}, "task_queue"),
        ({"local": True}, "local"),
        ({"max_concurrent": 1}, "max_concurrent"),
        ({"rate_limit": 1}, "rate_limit"),
        ({"policy": ExecutionPolicy(retry=RetrySpec(maximum_attempts=2))}, "retry"),
    ],
)
def test_a_flow_refuses_options_its_call_cannot_honour(options: dict[str, Any], named: str) -> None:
    registry = registry_with_a_tool()
    with pytest.raises(ToolRegistrationError) as caught:
        registry.flow("one", "One lookup.", nodes=NODES, **options)
    assert caught.value.rule == "options"
    assert f"flow 'one': option(s) {named} cannot be honoured" in str(caught.value)


def test_a_flow_spec_says_it_runs_once_within_its_timeout() -> None:
    registry = registry_with_a_tool()
    spec = registry.flow("one", "One lookup.", nodes=NODES, timeout=42, max_calls_per_run=3).spec
    assert spec.policy.start_to_close_timeout == 42
    assert spec.policy.retry.maximum_attempts == 1 and spec.policy.local is False
    assert spec.policy.max_calls_per_run == 3


@pytest.mark.parametrize("timeout", [math.inf, math.nan, 0, 1e12])
def test_a_flow_timeout_must_be_finite_and_bounded(timeout: float) -> None:
    registry = registry_with_a_tool()
    with pytest.raises(ToolRegistrationError, match="timeout must be > 0 and at most"):
        registry.flow("one", "One lookup.", nodes=NODES, timeout=timeout)


@pytest.mark.parametrize(
    "options",
    [
        {"start_to_close_timeout": math.inf},
        {"start_to_close_timeout": 1e300},
        {"heartbeat_timeout": math.inf},
        {"retry": {"maximum_interval": math.inf}},
        {"retry": {"initial_interval": 1e300}},
        {"rate_limit": math.inf},
    ],
)
def test_a_tool_duration_that_would_wedge_a_run_is_refused(options: dict[str, Any]) -> None:
    # `timedelta(seconds=inf)` raises inside the workflow, on every retry of its task.
    if isinstance(options.get("retry"), dict):
        with pytest.raises(ValueError):
            RetrySpec(**options["retry"])
        return
    with pytest.raises(ToolRegistrationError, match="invalid policy options"):
        ToolRegistry().register(lambda: "x", name="tick", **options)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("anthropic:claude-sonnet-4-5", "anthropic"),
        ("openai:gpt-4o-mini", "openai"),
        ("openai-responses:gpt-5-mini", "openai"),
        ("pydantic-ai:google-gla:gemini-2.5-pro", "google"),
        ("pydantic-ai:groq:llama", "groq"),
        ("scripted:/tmp/steps.json", "scripted"),
        ("mine:model", "mine"),
    ],
)
def test_the_alias_provider_of_a_model_spec(model: str, provider: str) -> None:
    assert alias_provider(model) == provider


@pytest.mark.parametrize("provider", ["Anthropic", "", " openai", "open ai", "ântropic"])
def test_an_alias_provider_key_must_be_a_spec_prefix(provider: str) -> None:
    # A key no run can have would be an alias silently never used.
    with pytest.raises(ToolRegistrationError, match="provider key") as caught:
        ToolRegistry().register(lambda: "x", name="tick", aliases={provider: "Tick"})
    assert caught.value.rule == "alias"


def test_an_alias_cannot_be_another_tools_name_nor_the_reverse() -> None:
    registry = registry_with_a_tool()
    with pytest.raises(ToolRegistrationError, match="a tool of that name is registered"):
        registry.register(lambda: "x", name="tick", aliases={"anthropic": "lookup"})
    provider_registry = ToolRegistry(name_style="provider")
    provider_registry.register(lambda: "x", name="tock", aliases={"anthropic": "getTime"})
    with pytest.raises(ToolRegistrationError, match="'tock' uses it as its alias") as caught:
        provider_registry.register(lambda: "x", name="getTime")
    assert caught.value.rule == "duplicate"
    # A tool's alias may repeat its own name.
    registry.register(lambda: "x", name="same", aliases={"openai": "same"})
