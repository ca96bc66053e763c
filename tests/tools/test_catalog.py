"""Pure catalog functions, also used by the workflow on specs from history."""

from __future__ import annotations

from durable_tools import ToolSpec
from durable_tools.tools import filter_specs, search_specs
from durable_tools.tools._catalog import tokenize

SPECS = [
    ToolSpec(name="get_weather", description="Current weather for a city.", tags=("weather",)),
    ToolSpec(name="weather_alerts", description="Storm warnings.", loading="deferred"),
    ToolSpec(name="create_invoice", description="Bill a customer.", tags=("billing",)),
    ToolSpec(name="read_mail", description="Read e-mail.", auth_scopes=("mail.read",)),
]


def test_tokenize() -> None:
    assert tokenize("getWeather for NYC") == ["get", "weather", "for", "nyc"]
    assert tokenize("github_create-issue") == ["github", "create", "issue"]


def test_search_ranks_name_over_tags_over_description() -> None:
    found = search_specs(SPECS, "weather")
    assert [s.name for s in found] == ["get_weather", "weather_alerts"]
    assert [s.name for s in search_specs(SPECS, "billing")] == ["create_invoice"]
    assert [s.name for s in search_specs(SPECS, "customer")] == ["create_invoice"]
    assert search_specs(SPECS, "weather", limit=0) == []
    assert search_specs(SPECS, "!!!") == []


def test_filter_specs() -> None:
    assert [s.name for s in filter_specs(SPECS)] == [
        "get_weather",
        "weather_alerts",
        "create_invoice",
    ]
    assert len(filter_specs(SPECS, granted_scopes={"mail.read"})) == 4
    assert [s.name for s in filter_specs(SPECS, loading="deferred")] == ["weather_alerts"]
    assert [s.name for s in filter_specs(SPECS, pattern="*weather*")] == [
        "get_weather",
        "weather_alerts",
    ]
