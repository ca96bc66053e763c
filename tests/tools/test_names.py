"""Tool names and aliases: each rule rejects at registration, naming the rule."""

from __future__ import annotations

import pytest

from durable_tools import ToolRegistrationError, ToolRegistry
from durable_tools.tools._names import check_alias, check_tool_name


def noop() -> str:
    """Do nothing."""
    return "ok"


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "empty"),
        ("a" * 65, "too_long"),
        ("get weather", "whitespace"),
        ("get\tweather", "whitespace"),
        ("météo", "ascii"),
        ("GetWeather", "pattern"),
        ("get-weather", "pattern"),
        ("1tool", "pattern"),
        ("_private", "pattern"),
        ("get.weather", "pattern"),
    ],
)
def test_invalid_names_are_rejected_with_their_rule(name: str, rule: str) -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(noop, name=name)
    assert caught.value.rule == rule
    assert isinstance(caught.value, ValueError)
    assert repr(name) in str(caught.value)
    assert len(registry) == 0


@pytest.mark.parametrize("name", ["a", "get_weather", "tool2", "a" * 64])
def test_valid_snake_case_names(name: str) -> None:
    check_tool_name(name)
    registry = ToolRegistry()
    registry.register(noop, name=name)
    assert registry.names() == [name]


def test_provider_style_accepts_what_openai_and_anthropic_accept() -> None:
    registry = ToolRegistry(name_style="provider")
    registry.register(noop, name="getWeather-v2")
    assert "getWeather-v2" in registry
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(noop, name="get.weather")
    assert caught.value.rule == "pattern"
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(noop, name="x" * 65)
    assert caught.value.rule == "too_long"


def test_max_length_is_configurable() -> None:
    registry = ToolRegistry(max_name_length=10)
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(noop, name="a" * 11)
    assert caught.value.rule == "too_long"
    assert "limit is 10" in str(caught.value)


def test_duplicate_name_is_rejected() -> None:
    registry = ToolRegistry()
    registry.register(noop)
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(noop)
    assert caught.value.rule == "duplicate"
    assert caught.value.tool_name == "noop"
    assert len(registry) == 1


def test_aliases_use_the_provider_pattern() -> None:
    registry = ToolRegistry()
    tool = registry.register(noop, aliases={"anthropic": "doNothing"})
    assert tool.spec.aliases == {"anthropic": "doNothing"}
    assert registry.get("doNothing", provider="anthropic") is tool
    for bad, rule in [("do nothing", "whitespace"), ("", "empty"), ("do.nothing", "pattern")]:
        with pytest.raises(ToolRegistrationError) as caught:
            registry.register(noop, name="other", aliases={"openai": bad})
        assert caught.value.rule == rule
    with pytest.raises(ToolRegistrationError) as caught:
        check_alias("x", provider="", tool_name="t")
    assert caught.value.rule == "alias"


def test_duplicate_alias_for_the_same_provider_is_rejected() -> None:
    registry = ToolRegistry()
    registry.register(noop, aliases={"anthropic": "doIt"})
    with pytest.raises(ToolRegistrationError) as caught:
        registry.register(noop, name="noop2", aliases={"anthropic": "doIt"})
    assert caught.value.rule == "duplicate"
    # The same alias for another provider is fine.
    registry.register(noop, name="noop3", aliases={"openai": "doIt"})
