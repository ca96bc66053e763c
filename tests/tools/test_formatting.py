"""Bounded, redacted outcomes: limits, artifact offload, truncation, redaction."""

from __future__ import annotations

import json

from durable_tools import ArtifactRef, ContentBlock, InvalidArguments, ToolResult
from durable_tools.tools import InMemoryArtifactStore, format_result
from durable_tools.tools._formatting import (
    abridge_arguments,
    error_outcome,
    redact_arguments,
    to_tool_result,
)


def test_small_output_is_kept_whole() -> None:
    result = to_tool_result({"temp": 21, "city": "Oslo"})
    outcome = format_result(result, call_id="c1", tool_name="weather")
    assert outcome.content == '{"temp": 21, "city": "Oslo"}'
    assert outcome.structured == {"temp": 21, "city": "Oslo"}
    assert (outcome.call_id, outcome.tool_name, outcome.is_error) == ("c1", "weather", False)
    assert outcome.artifacts == []


def test_output_over_the_limit_goes_to_the_store() -> None:
    store = InMemoryArtifactStore()
    rows = [{"id": i, "text": "é" * 50} for i in range(200)]
    result = to_tool_result(rows)
    full = json.dumps(rows, ensure_ascii=False, separators=(", ", ": "))
    outcome = format_result(result, call_id="c1", tool_name="dump", limit_bytes=2_000, store=store)
    assert len(outcome.content.encode("utf-8")) <= 2_000
    assert outcome.content.startswith(full[:100])
    assert outcome.structured is None  # its JSON is over the limit
    text_ref = outcome.artifacts[0]
    assert text_ref.uri in outcome.content
    assert str(text_ref.size) in outcome.content
    assert "output truncated" in outcome.content
    assert store.get(text_ref).decode("utf-8") == full
    assert text_ref.media_type == "application/json"


def test_output_over_the_limit_without_a_store_is_truncated_with_a_marker() -> None:
    outcome = format_result(
        ToolResult(content=[ContentBlock(text="x" * 50_000)]),
        call_id="c",
        tool_name="t",
        limit_bytes=1_000,
    )
    assert len(outcome.content.encode()) <= 1_000
    assert outcome.content.startswith("x" * 500)
    assert "of 50000 bytes; the rest was dropped" in outcome.content
    assert outcome.artifacts == []


def test_structured_kept_only_when_small() -> None:
    big = {"blob": "y" * 5_000}
    result = ToolResult(content=[ContentBlock(text="summary")], structured=big)
    store = InMemoryArtifactStore()
    outcome = format_result(result, call_id="c", tool_name="t", limit_bytes=1_000, store=store)
    assert outcome.content == "summary"
    assert outcome.structured is None
    assert json.loads(store.get(outcome.artifacts[0])) == big
    kept = format_result(result, call_id="c", tool_name="t", limit_bytes=10_000)
    assert kept.structured == big


def test_redaction_of_structured_values_at_any_depth() -> None:
    result = to_tool_result({"user": {"name": "a", "Password": "hunter2"}, "items": [{"token": 1}]})
    outcome = format_result(result, call_id="c", tool_name="t", redact=("password", "token"))
    assert "hunter2" not in outcome.content
    assert outcome.structured == {
        "user": {"name": "a", "Password": "[redacted]"},
        "items": [{"token": "[redacted]"}],
    }


def test_redact_and_abridge_arguments() -> None:
    args = {"to": "bob@example.com", "api_key": "sk-123", "body": "hello " * 50}
    assert redact_arguments(args, ["api_key"]) == {**args, "api_key": "[redacted]"}
    assert args["api_key"] == "sk-123"  # the input is not modified
    summary = abridge_arguments(args, 60, redact=["api_key"])
    assert len(summary) == 60 and summary.endswith("…")
    assert summary.startswith('to="bob@example.com", api_key="[redacted]"')
    assert "sk-123" not in abridge_arguments(args, 500, redact=["api_key"])
    assert abridge_arguments({"n": 1}) == "n=1"


def test_skip_error_and_empty_results() -> None:
    skipped = format_result(
        ToolResult(content=[ContentBlock(text="not today")], skipped="not today"),
        call_id="c",
        tool_name="t",
    )
    assert skipped.skipped == "not today"
    assert format_result(ToolResult(), call_id="c", tool_name="t").content != ""
    ref = ArtifactRef(uri="memory://x", size=3, sha256="x")
    with_ref = format_result(
        ToolResult(content=[ContentBlock(type="artifact", artifact=ref)]),
        call_id="c",
        tool_name="t",
    )
    assert with_ref.artifacts == [ref] and "memory://x" in with_ref.content
    failed = error_outcome("c9", "t", InvalidArguments("bad", errors=["$.a: wrong"]))
    assert failed.is_error and failed.error_kind == "InvalidArguments"
    assert "c9" in failed.content and "- $.a: wrong" in failed.content


def test_unpaired_surrogates_in_results_become_replacement_characters() -> None:
    from durable_tools import ToolResult
    from durable_tools.tools import format_result
    from durable_tools.tools._formatting import to_tool_result, valid_text

    assert valid_text("a\ud800b") == "a\ufffdb"
    assert valid_text("ok \U0001f600") == "ok \U0001f600"
    outcome = format_result(to_tool_result({"t": "x\udfff"}), call_id="c", tool_name="t")
    outcome.model_dump_json()  # encodable: it can be an activity result
    assert "\ufffd" in outcome.content and outcome.structured is None
    plain = format_result(ToolResult(structured={"t": "fine"}), call_id="c", tool_name="t")
    assert plain.structured == {"t": "fine"}
