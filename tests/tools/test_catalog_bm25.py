"""The BM25 ranking `search_tools` uses: words, stems, fields, ties."""

from __future__ import annotations

from durable_tools.tools import ToolSpec, search_specs
from durable_tools.tools._bm25 import BM25Index, spec_terms, terms, words


def test_words_split_snake_camel_paths_and_drop_urls() -> None:
    assert words("repos/list-forPullRequest_ID") == [
        "repos",
        "list",
        "for",
        "pull",
        "request",
        "id",
    ]
    assert words("HTTPServer see https://example.com/x") == ["http", "server", "see"]


def test_terms_stem_and_drop_stopwords() -> None:
    assert terms("list the pulls of my repositories") == ["list", "pull", "repo"]
    assert terms("close an issue") == terms("closed issues")
    assert terms("the of a") == []


def test_spec_terms_have_a_head_and_a_body() -> None:
    spec = ToolSpec(
        name="pulls_list",
        description="List pull requests\n\nLists them.",
        tags=("pulls",),
        input_schema={
            "type": "object",
            "properties": {"body": {"type": "object", "properties": {"state": {}}}},
        },
    )
    head, body = spec_terms(spec)
    assert head == {"pull": 3, "list": 2, "request": 1}
    assert body == {"list": 1, "bodi": 1, "state": 1}


def test_a_short_name_beats_a_long_description() -> None:
    specs = [
        ToolSpec(name="archive_report", description="Archive.\n\n" + "weather data " * 50),
        ToolSpec(name="get_weather", description="Current weather for a city."),
    ]
    assert [s.name for s in search_specs(specs, "weather")] == ["get_weather", "archive_report"]


def test_ties_go_to_the_name_whatever_the_order() -> None:
    docs = [
        ("b_tool", [{"alpha": 1}, {}]),
        ("a_tool", [{"alpha": 1}, {}]),
        ("c_tool", [{"beta": 1}, {}]),
    ]
    assert BM25Index(docs).rank(["alpha"], limit=5) == ["a_tool", "b_tool"]
    assert BM25Index(list(reversed(docs))).rank(["alpha"], limit=5) == ["a_tool", "b_tool"]
    assert BM25Index(docs).rank(["alpha"], limit=1) == ["a_tool"]
    assert BM25Index(docs).rank(["gamma"], limit=5) == []
    assert BM25Index([]).rank(["alpha"], limit=5) == []
    assert len(BM25Index(docs)) == 3
