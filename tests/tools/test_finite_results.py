"""A tool result holding NaN or an infinity reaches the model as JSON: each such number
is named as a string (`"NaN"`, `"Infinity"`, `"-Infinity"`), the rest kept as it is."""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel

from durable_tools import ContentBlock, ToolResult
from durable_tools.tools import format_result
from durable_tools.tools._formatting import finite_json, output_lost_outcome, to_tool_result


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in what the model reads: {text[:200]}")

    return json.loads(text, parse_constant=refuse)


class Sample(BaseModel):
    mean: float
    values: list[float]


VALUE = {"a": math.nan, "b": [1.0, [-math.inf, (math.inf, 2)]], "c": {"d": "NaN", "e": 3}}
EXPECTED = {"a": "NaN", "b": [1.0, ["-Infinity", ["Infinity", 2]]], "c": {"d": "NaN", "e": 3}}


def test_non_finite_numbers_are_named_as_strings_at_any_depth() -> None:
    assert finite_json(VALUE) == EXPECTED
    assert finite_json(1e308) == 1e308 and finite_json(-0.0) == 0.0
    assert finite_json(json.loads("[1e999, -1e999]")) == ["Infinity", "-Infinity"]


def test_the_outcome_the_model_reads_is_json() -> None:
    outcome = format_result(to_tool_result(VALUE), call_id="c1", tool_name="t")
    assert strict_json(outcome.content) == EXPECTED
    assert outcome.structured == EXPECTED  # what history keeps is JSON too

    model = to_tool_result(Sample(mean=math.nan, values=[math.inf, 1.0]))
    outcome = format_result(model, call_id="c2", tool_name="t")
    assert strict_json(outcome.content) == {"mean": "NaN", "values": ["Infinity", 1.0]}

    blocks = ToolResult(
        content=[ContentBlock(type="json", data=[math.nan]), ContentBlock(text="NaN as text")]
    )
    outcome = format_result(blocks, call_id="c3", tool_name="t")
    assert outcome.content == '["NaN"]\nNaN as text'  # a tool's own text is its own


def test_a_cut_or_lost_output_is_json_as_far_as_it_goes() -> None:
    big = {"pad": "x" * 3000, "n": [math.nan] * 10}
    outcome = format_result(to_tool_result(big), call_id="c1", tool_name="t", limit_bytes=10_000)
    assert strict_json(outcome.content)["n"] == ["NaN"] * 10
    lost = output_lost_outcome(
        to_tool_result({"n": math.inf}), call_id="c1", tool_name="t", reason="disk full"
    )
    assert lost.content.endswith('{"n": "Infinity"}')
