"""Registration options, safe defaults, examples, catalog, search, approval, threads."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from durable_tools import (
    ExecutionPolicy,
    Identity,
    LoadingMode,
    OAuthRequirement,
    RetrySpec,
    Safety,
    ToolNotFound,
    ToolRegistrationError,
    ToolRegistry,
)


def weather(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city.

    Args:
        city: The city.
        days: How many days.
    """
    return f"{city}:{days}"


def test_decorator_forms_return_the_function_unchanged() -> None:
    registry = ToolRegistry()

    @registry.tool
    def plain(x: int) -> int:
        """Plain."""
        return x

    @registry.tool(name="renamed", description="Custom description.")
    async def fancy(x: int) -> int:
        """Docstring summary."""
        return x

    assert plain(2) == 2
    assert fancy.__name__ == "fancy"
    assert registry.names() == ["plain", "renamed"]
    assert registry.get("plain").spec.description == "Plain."
    assert registry.get("renamed").spec.description == "Custom description."
    assert registry.get("renamed").is_async and not registry.get("plain").is_async


def test_every_spec_option_is_carried() -> None:
    registry = ToolRegistry()
    tool = registry.register(
        weather,
        tags=["weather", "forecast"],
        auth_scopes=["weather:read"],
        loading="deferred",
        networked=True,
        redact=["city"],
        workspace_root="/srv",
        start_to_close_timeout=timedelta(seconds=30),
        heartbeat_timeout=5,
        retry=RetrySpec(maximum_attempts=3),
        task_queue="io",
        local=True,
        oauth=OAuthRequirement(provider="github", scopes=("repo",)),
        aliases={"anthropic": "getWeather"},
        examples=[{"city": "Paris"}],
    )
    spec = tool.spec
    assert spec.tags == ("weather", "forecast")
    assert spec.auth_scopes == ("weather:read",)
    assert spec.loading == LoadingMode.DEFERRED
    assert spec.safety.networked and spec.safety.redact == ("city",)
    assert spec.safety.workspace_root == "/srv"
    assert spec.policy.start_to_close_timeout == 30.0
    assert spec.policy.heartbeat_timeout == 5
    assert spec.policy.retry.maximum_attempts == 3
    assert (spec.policy.task_queue, spec.policy.local) == ("io", True)
    assert spec.oauth == OAuthRequirement(provider="github", scopes=("repo",))
    assert spec.examples == ({"city": "Paris"},)
    # The spec is plain data: it round-trips through JSON (it will be recorded in history).
    assert type(spec).model_validate_json(spec.model_dump_json()) == spec


def test_safety_and_policy_objects_merge_with_flat_keywords() -> None:
    registry = ToolRegistry()
    tool = registry.register(
        weather,
        safety=Safety(shell=True, side_effect="internal"),
        read_only=True,
        policy=ExecutionPolicy(start_to_close_timeout=10, task_queue="q"),
        start_to_close_timeout=20,
    )
    safety, policy = tool.spec.safety, tool.spec.policy
    assert safety.shell and safety.read_only
    assert safety.side_effect == "internal"  # explicit wins over the read-only default
    assert (policy.start_to_close_timeout, policy.task_queue) == (20, "q")
    assert registry.register(weather, name="ro", read_only=True).spec.safety.side_effect == "none"


def test_invalid_option_values_are_registration_errors() -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(weather, start_to_close_timeout=-1)
    assert caught.value.rule == "options"
    with pytest.raises(ToolRegistrationError, match="unknown tool options: colour"):
        registry.register(weather, colour="red")  # type: ignore[call-arg]
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(weather, output_schema={"type": "not-a-type"})
    assert caught.value.rule == "schema"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, False),  # mutating, not idempotent: a timeout's outcome is unknown
        ({"idempotent": True}, True),
        ({"read_only": True}, True),
        ({"safety": Safety(idempotent=True)}, True),
    ],
)
def test_retry_timeouts_safe_default(flags: dict[str, Any], expected: bool) -> None:
    spec = ToolRegistry().register(weather, **flags).spec
    assert spec.policy.retry.retry_timeouts is expected


def test_retry_timeouts_explicit_value_is_kept() -> None:
    spec = ToolRegistry().register(weather, retry=RetrySpec(retry_timeouts=True)).spec
    assert spec.policy.retry.retry_timeouts is True
    spec = (
        ToolRegistry().register(weather, read_only=True, retry=RetrySpec(retry_timeouts=False)).spec
    )
    assert spec.policy.retry.retry_timeouts is False


def test_output_schema_option_accepts_a_model_or_a_dict() -> None:
    class Out(BaseModel):
        ok: bool

    registry = ToolRegistry()
    assert registry.register(weather, output_schema=Out).spec.output_schema == {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    }
    schema = {"type": "string"}
    assert registry.register(weather, name="w2", output_schema=schema).spec.output_schema == schema
    assert registry.register(weather, name="w3").spec.output_schema is None


def test_examples_that_break_the_schema_are_rejected_with_index_and_violation() -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(weather, examples=[{"city": "Paris"}, {"city": 3}])
    assert caught.value.rule == "example"
    message = str(caught.value)
    assert "example 1" in message and "$.city: 3 is not of type 'string'" in message
    with pytest.raises(ToolRegistrationError, match=r"example 0.*'where' is not an argument"):
        registry.register(weather, examples=[{"city": "x", "where": "y"}])
    with pytest.raises(ToolRegistrationError, match=r"example 0.*'city' is a required"):
        registry.register(weather, examples=[{}])
    assert len(registry) == 0


def test_approval_modes_and_predicates() -> None:
    registry = ToolRegistry()
    registry.register(weather, name="never")
    registry.register(weather, name="always", approval=True)
    registry.register(weather, name="big", approval=lambda args: args.get("days", 1) > 3)

    def broken(args: dict[str, Any]) -> bool:
        raise RuntimeError("bug")

    registry.register(weather, name="broken", approval=broken)
    assert [registry.get(n).spec.approval for n in ("never", "always", "big")] == [
        "never",
        "always",
        "conditional",
    ]
    assert registry.requires_approval("never", {"city": "x"}) is False
    assert registry.requires_approval("always", {"city": "x"}) is True
    assert registry.requires_approval("big", {"city": "x", "days": 5}) is True
    assert registry.requires_approval("big", '{"city": "x", "days": 2}') is False
    assert registry.requires_approval("broken", {"city": "x"}) is True  # fails closed
    # The predicate stays on the worker; the spec is data only.
    assert "lambda" not in registry.get("big").spec.model_dump_json()
    with pytest.raises(ToolNotFound):
        registry.requires_approval("nope", {})


def test_get_unknown_tool_raises_tool_not_found() -> None:
    registry = ToolRegistry()
    registry.register(weather)
    with pytest.raises(ToolNotFound) as caught:
        registry.get("wether")
    assert "wether" in caught.value.message
    assert not caught.value.retryable


def build_catalog() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(weather)
    registry.register(
        weather,
        name="github_create_issue",
        auth_scopes=["github"],
        description="Open an issue in a GitHub repository.",
        tags=["github"],
        loading="deferred",
    )
    registry.register(
        weather,
        name="github_search_code",
        auth_scopes=["github"],
        description="Search code on GitHub.",
        tags=["github", "search"],
        loading="deferred",
    )
    registry.register(
        weather,
        name="send_invoice",
        description="Email an invoice to a customer.",
        tags=["billing"],
        loading="deferred",
        spends_money=True,
    )
    registry.register(
        weather,
        name="admin_reset",
        description="Reset everything.",
        visible_to=lambda who: who.user == "root",
    )
    return registry


def names(specs: list[Any]) -> list[str]:
    return [s.name for s in specs]


def test_catalog_filters_by_scope_identity_loading_and_pattern() -> None:
    registry = build_catalog()
    assert len(registry.specs()) == 5
    # No scopes granted: scoped tools are invisible (fail closed).
    assert names(registry.catalog()) == ["weather", "send_invoice"]
    assert names(registry.catalog(granted_scopes=["github"])) == [
        "weather",
        "github_create_issue",
        "github_search_code",
        "send_invoice",
    ]
    assert "admin_reset" in names(registry.catalog(identity=Identity(user="root")))
    assert names(registry.catalog(granted_scopes=["github"], loading="always")) == ["weather"]
    assert names(registry.catalog(granted_scopes=["github"], pattern="github_*")) == [
        "github_create_issue",
        "github_search_code",
    ]


def test_visibility_rule_that_raises_hides_the_tool() -> None:
    registry = ToolRegistry()

    def rule(who: Identity) -> bool:
        raise RuntimeError("bug")

    registry.register(weather, visible_to=rule)
    assert registry.catalog() == []


def test_search_finds_deferred_tools_the_run_may_see() -> None:
    registry = build_catalog()
    assert names(registry.search("invoice")) == ["send_invoice"]
    # github tools need a scope the run lacks.
    assert registry.search("github issue") == []
    found = names(registry.search("create a github issue", granted_scopes=["github"]))
    assert found[0] == "github_create_issue"
    assert "weather" not in names(registry.search("weather forecast"))  # not deferred
    assert names(registry.search("github", granted_scopes=["github"], limit=1)) == [
        "github_create_issue"
    ]
    assert registry.search("") == []
    assert registry.search("zzz unrelated") == []


def test_concurrent_registration_from_threads_keeps_every_tool() -> None:
    registry = ToolRegistry()
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        barrier.wait()
        for j in range(10):
            try:
                registry.register(weather, name=f"tool_{index}_{j}")
                registry.register(weather, name="contested")
            except ToolRegistrationError as exc:
                errors.append(exc)
            registry.catalog()  # reads interleave with writes

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(registry) == 8 * 10 + 1
    assert len(set(registry.names())) == len(registry)
    # Exactly one thread won the contested name; everyone else got a duplicate error.
    assert len(errors) == 8 * 10 - 1
    assert all(isinstance(e, ToolRegistrationError) and e.rule == "duplicate" for e in errors)
