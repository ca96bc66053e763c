"""Parsing and validating model arguments: fail closed, say where and why."""

from __future__ import annotations

import json
from typing import Any

import pytest

from durable_tools import InvalidArguments, ToolExecutionError, ToolSpec
from durable_tools.tools._validation import (
    MAX_DEPTH,
    _cache,
    check_arguments,
    non_finite_number,
    parse_arguments,
    schema_digest,
    schema_validator,
    validate_arguments,
    validate_output,
)

SPEC = ToolSpec(
    name="weather",
    input_schema={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1},
            "where": {
                "type": "object",
                "properties": {"lat": {"type": "number"}},
                "required": ["lat"],
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    },
    output_schema={"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]},
)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ('{"city": "Paris"', "line 1, column 17 (char 16)"),
        ("{'city': 'Paris'}", "Expecting property name enclosed in double quotes"),
        ('{"city": "Paris",}', "char 17"),
        ("", "empty"),
        ("   ", "empty"),
        ("[1, 2]", "must be a JSON object, got an array"),
        ('"city"', "got a string"),
        ("null", "got null"),
        ("42", "got a number"),
        ('{"city": "a", "city": "b"}', "duplicate key 'city'"),
        (b"\xff\xfe", "not valid UTF-8"),
    ],
)
def test_malformed_arguments_are_rejected_never_replaced(raw: Any, fragment: str) -> None:
    with pytest.raises(InvalidArguments) as caught:
        parse_arguments(raw)
    assert fragment in caught.value.message
    assert caught.value.errors and caught.value.errors[0].startswith("$")
    assert not caught.value.retryable


def test_parse_accepts_objects_and_mappings() -> None:
    assert parse_arguments('{"city": "Paris"}') == {"city": "Paris"}
    assert parse_arguments("{}") == {}
    assert parse_arguments(b'{"a": 1}') == {"a": 1}
    original = {"a": 1}
    parsed = parse_arguments(original)
    assert parsed == original and parsed is not original


def test_type_errors_name_the_json_path() -> None:
    with pytest.raises(InvalidArguments) as caught:
        validate_arguments(SPEC, {"city": 3})
    assert caught.value.errors == ["$.city: 3 is not of type 'string'"]
    assert "$.city" in caught.value.message


def test_every_violation_one_per_line_best_first() -> None:
    with pytest.raises(InvalidArguments) as caught:
        validate_arguments(SPEC, {"days": 0, "where": {"lat": "north"}})
    errors = caught.value.errors
    assert errors[0] == "$: 'city' is a required property"
    assert "$.days: 0 is less than the minimum of 1" in errors
    assert "$.where.lat: 'north' is not of type 'number'" in errors
    assert len(errors) == 3
    assert "3 problems" in caught.value.message


def test_extra_and_hidden_properties_are_not_arguments_the_model_may_set() -> None:
    with pytest.raises(InvalidArguments) as caught:
        validate_arguments(SPEC, {"city": "Paris", "ctx": {"secrets": {}}})
    assert caught.value.errors == [
        "$: 'ctx' is not an argument the model may set (allowed: city, days, where)"
    ]


def test_valid_arguments_pass_through() -> None:
    args = {"city": "Paris", "days": 2, "where": {"lat": 1.5}}
    assert validate_arguments(SPEC, args) == args


def test_validators_are_compiled_once_per_tool_and_schema() -> None:
    first = schema_validator("cache_probe", SPEC.input_schema)
    assert schema_validator("cache_probe", dict(SPEC.input_schema)) is first
    changed = {**SPEC.input_schema, "required": []}
    assert schema_validator("cache_probe", changed) is not first
    assert ("cache_probe", next(k for n, k in _cache if n == "cache_probe")) in _cache


def test_output_validation() -> None:
    validate_output(SPEC, {"t": 1.5})
    with pytest.raises(ToolExecutionError) as caught:
        validate_output(SPEC, {"t": "warm"})
    assert not caught.value.retryable
    assert caught.value.details["errors"] == ["$.t: 'warm' is not of type 'number'"]
    validate_output(ToolSpec(name="free"), {"anything": True})  # no output schema: no check


def test_unpaired_surrogates_are_invalid_arguments() -> None:
    from durable_tools import InvalidArguments
    from durable_tools.tools._validation import parse_arguments

    with pytest.raises(InvalidArguments, match="surrogate"):
        parse_arguments('{"text": "\\ud800"}')
    with pytest.raises(InvalidArguments, match="surrogate"):
        parse_arguments('{"\\udfff": 1}')
    # A proper pair is one character and fine.
    assert parse_arguments('{"text": "\\ud83d\\ude00"}') == {"text": "\U0001f600"}


def test_integral_floats_become_ints_where_the_schema_says_integer() -> None:
    parsed = parse_arguments('{"city": "Paris", "days": 2.0, "where": {"lat": 1.0}}')
    args = validate_arguments(SPEC, parsed)
    assert args == {"city": "Paris", "days": 2, "where": {"lat": 1.0}}
    assert type(args["days"]) is int  # JSON Schema counts 2.0 as an integer
    assert type(args["where"]["lat"]) is float  # "number": left as the model wrote it
    assert type(parsed["days"]) is float  # the input is not changed
    with pytest.raises(InvalidArguments, match=r"\$\.days: 2\.5 is not of type 'integer'"):
        validate_arguments(SPEC, {"city": "Paris", "days": 2.5})


def test_integer_places_inside_unions_arrays_and_references() -> None:
    spec = ToolSpec(
        name="places",
        input_schema={
            "type": "object",
            "properties": {
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "maybe": {"type": "array", "items": {"type": ["integer", "null"]}},
                "ref": {"$ref": "#/$defs/count"},
                "number": {"type": "number"},
                "free": {},
            },
            "$defs": {"count": {"type": "integer"}},
        },
    )
    args = validate_arguments(
        spec, {"either": 1.0, "maybe": [2.0, None, 3], "ref": -0.0, "number": 4.0, "free": 5.0}
    )
    assert args == {"either": 1, "maybe": [2, None, 3], "ref": 0, "number": 4.0, "free": 5.0}
    assert [type(args[k]) for k in ("either", "ref", "number", "free")] == [int, int, float, float]
    assert type(args["maybe"][0]) is int


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ('{"days": 1e400}', "$.days"),
        ('{"days": -1e999}', "$.days"),
        ('{"where": {"lat": [0, 2e308]}}', "$.where.lat[1]"),
        ({"days": float("inf")}, "$.days"),
        ('{"days": Infinity}', "$.days"),
        ('{"where": {"lat": [1, -Infinity]}}', "$.where.lat[1]"),
    ],
)
def test_numbers_out_of_range_are_rejected_not_made_infinite(raw: Any, path: str) -> None:
    # json.loads reads 1e400 as inf, which an activity input would carry as null.
    with pytest.raises(InvalidArguments) as caught:
        parse_arguments(raw)
    assert caught.value.errors == [
        f"{path}: number out of range (it is not a finite 64-bit float): send a finite number"
    ]
    assert parse_arguments('{"days": 1e-400}') == {"days": 0.0}  # underflow is finite


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ('{"city": NaN}', "$.city"),
        ('{"where": {"lat": [[1, 2], [3, NaN]]}}', "$.where.lat[1][1]"),
        ({"days": float("nan")}, "$.days"),
        ({"a": [{"b": (1, float("nan"))}]}, "$.a[0].b[1]"),
    ],
)
def test_nan_is_refused_naming_where_it_stands(raw: Any, path: str) -> None:
    # Python's json.loads reads NaN as a float; the model must hear which value it was.
    with pytest.raises(InvalidArguments) as caught:
        parse_arguments(raw)
    assert caught.value.message == f"arguments contain NaN at {path}, which is not valid JSON"
    assert caught.value.errors == [f"{path}: NaN is not valid JSON: send a finite number"]


def _nested(levels: int) -> str:
    """An object `levels` deep: the top-level object is level 1."""
    return '{"a":' * levels + "1" + "}" * levels


def test_nesting_is_capped_with_a_message_naming_the_limit() -> None:
    assert MAX_DEPTH == 64
    assert parse_arguments(_nested(MAX_DEPTH))  # the limit itself is allowed
    assert parse_arguments('{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}")
    for raw in (
        _nested(MAX_DEPTH + 1),
        '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}",
        _nested(260),  # parses, but no activity input can carry it
        json.loads(_nested(MAX_DEPTH + 1)),  # already parsed: same rule
    ):
        with pytest.raises(InvalidArguments) as caught:
            parse_arguments(raw)
        assert caught.value.message == "arguments are nested deeper than the limit of 64 levels"
        (line,) = caught.value.errors
        assert line.startswith("$.a") and line.endswith(
            ": nested deeper than the limit of 64 levels: send a flatter structure"
        )
        assert len(line) < 300  # the path is cut, the message stays short


def test_non_finite_number_finds_the_first_nan_or_infinity_with_its_path() -> None:
    assert non_finite_number({"a": [1, 2.5, None, "NaN"], "b": {"c": 1e308}}) is None
    assert non_finite_number(float("nan")) == "$ (NaN)"
    assert non_finite_number({"a": [0, {"b": float("-inf")}]}, "$.output") == (
        "$.output.a[1].b (-Infinity)"
    )
    assert non_finite_number([(1, float("inf"))]) == "$[0][1] (Infinity)"
    assert non_finite_number(json.loads('{"x": 1e999}')) == "$.x (Infinity)"


def test_check_arguments_parses_checks_and_names_the_schema_it_checked_against() -> None:
    checked = check_arguments(SPEC, '{"city": "Paris", "days": 2.0}')
    assert checked.values == {"city": "Paris", "days": 2}
    assert type(checked.values["days"]) is int  # what the tool receives and the run records
    assert checked.schema == schema_digest(SPEC.input_schema)
    with pytest.raises(InvalidArguments, match="'weather' break its schema"):
        check_arguments(SPEC, '{"city": "Paris", "days": 0}')


def test_check_arguments_without_input_validation_still_parses_fail_closed() -> None:
    unchecked = SPEC.model_copy(update={"validation": "output"})
    checked = check_arguments(unchecked, '{"days": "many", "extra": true}')
    assert checked.values == {"days": "many", "extra": True}  # the schema is not asked
    assert checked.schema == schema_digest(SPEC.input_schema)  # an approval still binds it
    for raw in ('{"city": NaN}', '{"a": 1, "a": 2}', "[]", '{"a": 1e400}'):
        with pytest.raises(InvalidArguments):
            check_arguments(unchecked, raw)


def test_check_arguments_honours_the_schema_a_person_approved_under() -> None:
    approved = schema_digest(SPEC.input_schema)
    # The schema is the one approved: checked against it as ever.
    with pytest.raises(InvalidArguments):
        check_arguments(SPEC, '{"city": 3}', bound_schema=approved)
    # The tool's schema changed while the call waited: the approved arguments run as they
    # are (parsed, never checked against a schema the approver did not see).
    changed = SPEC.model_copy(
        update={"input_schema": {**SPEC.input_schema, "required": ["city", "where"]}}
    )
    assert check_arguments(changed, '{"city": "Paris"}', bound_schema=approved).values == {
        "city": "Paris"
    }
    with pytest.raises(InvalidArguments):
        check_arguments(changed, '{"city": "Paris"}')
    # A forged or garbled digest is "another schema": never a way past parsing.
    for forged in ("", "x" * 10_000, approved.upper(), approved + "\u200b"):
        with pytest.raises(InvalidArguments, match="not valid JSON"):
            check_arguments(changed, '{"city": NaN}', bound_schema=forged)


def test_check_arguments_digests_stay_right_when_the_cache_turns_over() -> None:
    # More schemas than the cache holds: every digest is still its own schema's.
    specs = [
        ToolSpec(name="probe", input_schema={"type": "object", "maxProperties": n})
        for n in range(1_500)
    ]
    for spec in specs * 2:
        assert check_arguments(spec, "{}").schema == schema_digest(spec.input_schema)
    assert len({check_arguments(spec, "{}").schema for spec in specs}) == len(specs)
