"""The BM25 ranking `search_tools` uses: words, stems, fields, ties."""

from __future__ import annotations

import asyncio
import json
import random
import re
import string
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry, ToolSpec
from durable_tools.tools import search_specs
from durable_tools.tools._bm25 import BM25Index, _split_humps, spec_terms, terms, words
from durable_tools.tools._catalog_pack import PackedCatalog, pack, unpack_terms
from support import answer, calls, running_worker, write_script


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


def test_humps_split_as_before_even_where_odd() -> None:
    # `aBCd` stays one word after `a`: the old pattern's first branch took the `B`, so
    # its second could not split `BCd`. Kept as it was: see the next test.
    assert words("getHTTPServer aBCd ABcD x9Y") == [
        "get", "http", "server", "a", "bcd", "a", "bcd", "x9", "y",
    ]  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="aBC0z Z_é-", max_size=30) | st.text(max_size=30))
def test_humps_split_exactly_as_the_regex_they_replaced(text: str) -> None:
    # The old pattern, kept here as the reference: a query's terms are computed in the
    # workflow, so a replay of a run that searched before the change must see the same.
    old = re.sub(r"([a-z0-9])([A-Z])|([A-Z]+)([A-Z][a-z])", r"\1\3 \2\4", text)
    assert _split_humps(text) == old


@pytest.mark.timeout(10)
def test_a_long_run_of_capitals_is_linear() -> None:
    # Quadratic before: 30,000 capitals took 9 s, a million would take hours, inside a
    # workflow task when the model's search_tools query holds them.
    assert words("A" * 1_000_000 + "b") == ["a" * 999_999, "ab"]
    assert terms("Q" * 1_000_000) == ["q" * 1_000_000]


# ------------------------------------------------------------ shared state, threads

_SUFFIXES = ["ing", "ies", "ational", "ness", "ed", "ly", "izations", "fulness", "s", ""]


def _workload(words: int = 500, seed: int = 20) -> tuple[list[str], list[ToolSpec]]:
    """Texts of made-up words no other test stems, and specs built from them."""
    rng = random.Random(seed)  # fixed: the same workload every run
    vocabulary = [
        "zq"
        + "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8)))
        + rng.choice(_SUFFIXES)
        for _ in range(words)
    ]
    texts = [" ".join(rng.sample(vocabulary, 12)) for _ in range(words // 10)]
    specs = [
        ToolSpec(name=f"tool_{i}", description=f"{texts[i]}\n\n{texts[-i - 1]}") for i in range(25)
    ]
    return texts, specs


def _results(texts: list[str], specs: list[ToolSpec]) -> dict[str, Any]:
    packed = pack(specs, budget=10**9)
    return {
        "terms": [terms(text) for text in texts],
        "packed": {name: [h, b] for name, (h, b) in unpack_terms(packed).items()},
        "search": [[s.name for s in search_specs(specs, text, limit=3)] for text in texts[:10]],
    }


_REFERENCE = """
import json, sys
sys.path[:0] = sys.argv[1:]  # this folder, and tests/ for `support`
from test_catalog_bm25 import _results, _workload
print(json.dumps(_results(*_workload())))
"""


@pytest.mark.timeout(120)
def test_threads_stemming_and_building_catalogs_at_once_agree_with_one_thread() -> None:
    # The reference comes from a fresh interpreter, one thread, nothing cached. Here six
    # threads compute the same at once, the interpreter switching threads every
    # microsecond: with one stemmer shared by the module they corrupted each other's words
    # (wrong stems, IndexError) and its lru_cache kept the wrong stems for later calls.
    reference = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-c",
                _REFERENCE,
                str(Path(__file__).parent),
                str(Path(__file__).parent.parent),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    texts, specs = _workload()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(6) as pool:
            outcomes = list(pool.map(lambda _: _results(texts, specs), range(6)))
    finally:
        sys.setswitchinterval(interval)
    for outcome in outcomes:
        assert json.loads(json.dumps(outcome)) == reference
    assert json.loads(json.dumps(_results(texts, specs))) == reference  # nothing poisoned


WORKER_WORDS = 6000


def _worker_registry() -> ToolRegistry:
    texts, _ = _workload(words=WORKER_WORDS, seed=21)  # words no other test has stemmed
    registry = ToolRegistry()
    for i in range(3):  # the advertised ones: first by name and by registration
        registry.register(lambda: "x", name=f"aaa_{i}", description="Advertised.", read_only=True)
    for i, text in enumerate(texts):
        registry.register(lambda: "x", name=f"tool_{i}", description=text, read_only=True)
    return registry


def _packed_terms(history: WorkflowHistory) -> dict[str, Any]:
    """The search terms the run's catalog activity computed, from its marker in history."""
    converter = pydantic_data_converter.payload_converter
    for event in history.events:
        marker = event.marker_recorded_event_attributes
        if event.HasField("marker_recorded_event_attributes") and "result" in marker.details:
            packed = converter.from_payload(marker.details["result"].payloads[0], PackedCatalog)
            return json.loads(json.dumps(unpack_terms(packed)))
    raise AssertionError("no catalog in the history")


_WORKER_REFERENCE = """
import json, sys
sys.path[:0] = sys.argv[1:]  # this folder, and tests/ for `support`
from test_catalog_bm25 import _worker_registry
from durable_tools.tools._catalog_pack import pack, unpack_terms
print(json.dumps(unpack_terms(pack(_worker_registry().specs(), budget=10**9))))
"""


@pytest.mark.timeout(120)
async def test_concurrent_runs_on_one_worker_index_and_find_the_same_tools(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Every run packs its catalog (stemming every description) in a worker thread at the
    # same time; with one stemmer shared by the module, `catalog_packed` raised IndexError
    # or recorded wrong stems in the run's history. The reference comes from a fresh
    # interpreter; computed here first, it would fill a shared cache before the runs.
    reference = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-c",
                _WORKER_REFERENCE,
                str(Path(__file__).parent),
                str(Path(__file__).parent.parent),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    registry = _worker_registry()
    deferred = [spec for spec in registry.specs() if spec.name.startswith("tool_")]
    queries = [spec.description for spec in deferred[:5]]
    script = write_script(
        tmp_path,
        [
            calls(*((f"s{i}", "search_tools", {"query": q}) for i, q in enumerate(queries))),
            answer("done"),
        ],
    )
    config = AgentConfig(model=script, max_advertised_tools=3)
    async with running_worker(client, registry, task_queue):
        tools = DurableTools(client, task_queue)
        runs = [await tools.start(f"search {n}", config=config) for n in range(8)]
        results = await asyncio.gather(*(run.result() for run in runs))
        conversations = await asyncio.gather(*(run.conversation() for run in runs))
        histories = await asyncio.gather(*(run.handle.fetch_history() for run in runs))
    assert all(r.status == RunStatus.COMPLETED for r in results), [r.reason for r in results]
    for history in histories:
        assert _packed_terms(history) == reference
    expected = [[s.name for s in search_specs(deferred, q, limit=5)] for q in queries]
    for conversation in conversations:
        replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
        for i, names in enumerate(expected):
            found = [line[2:].split(":")[0] for line in replies[f"s{i}"].splitlines()[1:]]
            assert found[: len(names)] == names, (i, replies[f"s{i}"])
