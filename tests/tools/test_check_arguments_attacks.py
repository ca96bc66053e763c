"""Attacks on the one argument check (`check_arguments`) and on the request an `ask`
verdict carries: equal-looking arguments, the validator cache turning over between an
approval and the run, and what the check reports of the schema it checked against."""

from __future__ import annotations

import unicodedata
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from durable_tools import ApprovalPolicy, InvalidArguments, ToolSpec
from durable_tools.policy._decide import decide
from durable_tools.tools._validation import check_arguments, schema_digest

REFUND = ToolSpec(
    name="refund",
    approval="always",
    input_schema={
        "type": "object",
        "properties": {
            "order_id": {"type": "string"},
            "amount_cents": {"type": "integer"},
            "note": {},
        },
        "required": ["order_id", "amount_cents"],
    },
)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def request_hash(raw: str) -> str:
    """The arguments hash a person is asked to approve for these arguments."""
    checked = check_arguments(REFUND, raw)
    verdict = decide(REFUND, ApprovalPolicy(), checked.values, now=NOW, grants=[])
    assert verdict.action == "ask"
    return verdict.arguments_hash


def test_equal_looking_arguments_are_asked_as_different_requests() -> None:
    base = request_hash('{"order_id": "A1", "amount_cents": 500, "note": 1}')
    # The same JSON object written in another key order or spacing is the same request.
    assert request_hash('{"note":1,"amount_cents":500,"order_id":"A1"}') == base
    # An integral float where the schema asks an integer is that integer (what runs).
    assert request_hash('{"order_id": "A1", "amount_cents": 500.0, "note": 1}') == base
    # Values JSON tells apart never share a request, where nothing makes them equal.
    for other in (
        '{"order_id": "A1", "amount_cents": 500, "note": 1.0}',
        '{"order_id": "A1", "amount_cents": 500, "note": true}',
        '{"order_id": "A1", "amount_cents": 500, "note": "1"}',
        '{"order_id": "A1", "amount_cents": 500, "note": [1]}',
        '{"order_id": "A1\u200b", "amount_cents": 500, "note": 1}',
        '{"order_id": "a1", "amount_cents": 500, "note": 1}',
        '{"order_id": "A1", "amount_cents": 500, "note": 1, "Note": 1}',
    ):
        assert request_hash(other) != base, other
    nfc = unicodedata.normalize("NFC", "caf\u00e9")
    nfd = unicodedata.normalize("NFD", nfc)
    assert request_hash(f'{{"order_id": "{nfc}", "amount_cents": 1}}') != request_hash(
        f'{{"order_id": "{nfd}", "amount_cents": 1}}'
    )
    assert request_hash('{"order_id": "A", "amount_cents": 0, "note": 0.0}') != request_hash(
        '{"order_id": "A", "amount_cents": 0, "note": -0.0}'
    )


@pytest.mark.parametrize(
    "raw",
    [
        '{"order_id": "A1", "amount_cents": 1, "amount_cents": 900000}',  # duplicate key
        '{"order_id": "A1", "amount_cents": NaN}',
        '{"order_id": "A1", "amount_cents": 1e400}',
        '{"order_id": "A1", "amount_cents": -Infinity}',
        '{"order_id": "A1", "amount_cents": ' + "9" * 5000 + "}",
        '{"order_id": "A1", "amount_cents": 500.5}',
        '{"order_id": "A1", "amount_cents": true}',
    ],
)
def test_arguments_no_person_could_read_as_one_value_are_refused(raw: str) -> None:
    with pytest.raises(InvalidArguments):
        check_arguments(REFUND, raw)


def test_an_approved_schema_still_checks_after_the_validator_cache_turned_over() -> None:
    approved = check_arguments(REFUND, '{"order_id": "A1", "amount_cents": 5}')
    assert approved.schema == schema_digest(REFUND.input_schema)
    # More schemas than the cache keeps are compiled between the approval and the run.
    for number in range(1_100):
        other = ToolSpec(
            name="refund",
            input_schema={"type": "object", "properties": {f"p{number}": {"type": "string"}}},
        )
        assert check_arguments(other, "{}").schema != approved.schema
    # The worker, bound to the approved schema (still the tool's), checks as always.
    again = check_arguments(
        REFUND, {"order_id": "A1", "amount_cents": 5}, bound_schema=approved.schema
    )
    assert again == approved
    with pytest.raises(InvalidArguments):
        check_arguments(
            REFUND, {"order_id": "A1", "amount_cents": "5"}, bound_schema=approved.schema
        )


def test_two_tools_with_one_schema_share_its_digest_but_not_their_names() -> None:
    twin = ToolSpec(name="refund_twin", input_schema=dict(REFUND.input_schema))
    values: dict[str, Any] = {"order_id": "A", "amount_cents": 1}
    assert check_arguments(twin, values).schema == check_arguments(REFUND, values).schema
    with pytest.raises(InvalidArguments, match="refund_twin"):
        check_arguments(twin, {"order_id": 1, "amount_cents": 1})


def test_arguments_not_checked_under_the_current_schema_do_not_claim_it() -> None:
    old = {"type": "object", "properties": {"a": {"type": "string"}}}
    new_spec = ToolSpec(
        name="t",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
    )
    checked = check_arguments(new_spec, {"a": "x"}, bound_schema=schema_digest(old))
    assert checked.values == {"a": "x"}  # runs as approved: by design
    # Its docstring: "schema_digest of the input schema they were checked against".
    assert checked.schema != schema_digest(new_spec.input_schema)


def test_threads_turning_the_cache_over_never_get_another_schemas_digest_or_check() -> None:
    # A worker checks calls of many tools at once: thousands of schemas for one tool name,
    # more than the cache keeps, from several threads; each check must use its own schema.
    def schema(number: int) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": number}},
            "required": ["n"],
        }

    def check(start: int) -> list[str]:
        wrong: list[str] = []
        for number in range(start, start + 1_500):
            spec = ToolSpec(name="same", input_schema=schema(number))
            fits = check_arguments(spec, {"n": number})
            if fits.schema != schema_digest(schema(number)):
                wrong.append(f"{number}: digest of another schema")
            try:
                check_arguments(spec, {"n": number + 1}, bound_schema=fits.schema)
                wrong.append(f"{number}: {number + 1} passed a maximum of {number}")
            except InvalidArguments:
                pass
        return wrong

    with ThreadPoolExecutor(max_workers=4) as pool:
        found = [line for lines in pool.map(check, range(0, 6_000, 1_500)) for line in lines]
    assert found == []
