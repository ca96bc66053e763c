"""The automatic local-activity choice made at registration (`local=None`, the default)."""

from __future__ import annotations

from typing import Any

import pytest

from durable_tools import OAuthRequirement, ToolContext, ToolRegistry
from durable_tools.client.render._tools import render_tool, tool_json
from durable_tools.tools._auto_local import AUTO_LOCAL_MAX_SECONDS, auto_local_refusal

SHORT = {"read_only": True, "start_to_close_timeout": 5}
"""What makes a plain Python tool run locally by default."""


def lookup(key: str) -> str:
    """Look a key up."""
    return key


def with_context(key: str, ctx: ToolContext) -> str:
    """Look a key up, maybe reporting progress."""
    return key


def local_of(**options: Any) -> bool | None:
    tool = ToolRegistry().register(lookup, **options)
    return tool.spec.policy.local


def test_a_read_only_short_plain_tool_runs_locally() -> None:
    assert local_of(**SHORT) is True
    assert local_of(read_only=True, start_to_close_timeout=AUTO_LOCAL_MAX_SECONDS) is True


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"start_to_close_timeout": 5}, "not read-only"),
        ({**SHORT, "read_only": False, "idempotent": True}, "not read-only"),
        ({"read_only": True}, "start_to_close_timeout 60 s is over 10 s"),  # the default
        ({**SHORT, "start_to_close_timeout": 10.5}, "is over 10 s"),
        ({**SHORT, "max_concurrent": 2}, "max_concurrent or rate_limit"),
        ({**SHORT, "rate_limit": 5.0}, "max_concurrent or rate_limit"),
        ({**SHORT, "task_queue": "gpu"}, "task queue 'gpu'"),
        ({**SHORT, "heartbeat_timeout": 2}, "heartbeat timeout"),
        ({**SHORT, "oauth": OAuthRequirement(provider="github")}, "OAuth"),
        ({**SHORT, "transport": "http"}, "transport http"),
    ],
)
def test_a_tool_that_needs_a_regular_activity_stays_regular(
    options: dict[str, Any], why: str
) -> None:
    tool = ToolRegistry().register(lookup, **options)
    assert tool.spec.policy.local is False
    refusal = auto_local_refusal(tool.spec, tool.plan)
    assert refusal is not None and why in refusal


def test_a_tool_taking_a_context_stays_regular() -> None:
    tool = ToolRegistry().register(with_context, **SHORT)
    assert tool.spec.policy.local is False
    assert "ToolContext" in (auto_local_refusal(tool.spec, tool.plan) or "")


def test_the_explicit_choice_wins() -> None:
    assert local_of(**SHORT, local=False) is False
    assert local_of(start_to_close_timeout=120, local=True) is True  # as before: opt-in
    assert local_of(**SHORT, local=True) is True


def test_schema_tools_and_stubs_stay_regular() -> None:
    registry = ToolRegistry()
    schema_tool = registry.register_schema(
        lambda arguments, ctx: "x", name="schema_lookup", input_schema={"type": "object"}, **SHORT
    )
    callback = registry.callback_tool("on_client", timeout=5, read_only=True)
    subagent = registry.subagent({"model": "scripted:none"}, name="helper", **SHORT)
    assert [t.spec.policy.local for t in (schema_tool, callback, subagent)] == [False] * 3


def test_the_catalog_and_the_listing_say_which_tools_run_locally() -> None:
    registry = ToolRegistry()
    registry.register(lookup, name="quick", **SHORT)
    registry.register(lookup, name="slow", read_only=True)
    by_name = {spec.name: spec.policy.local for spec in registry.catalog()}
    assert by_name == {"quick": True, "slow": False}
    quick, slow = registry.specs()
    assert "activity: local" in render_tool(quick)
    assert "activity: local" not in render_tool(slow)
    assert tool_json(quick)["catalog"]["local_activity"] is True
    assert tool_json(slow)["catalog"]["local_activity"] is False
