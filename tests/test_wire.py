"""Wire types write only what differs from their defaults, and read both forms.

The full form is what every recorded history and every older worker holds: the payloads of
the checked-in histories must still decode, and re-encoding them in the short form must
lose nothing.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import to_json
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_tools import (
    AgentConfig,
    ApprovalPolicy,
    ArtifactRef,
    Identity,
    Limits,
    Message,
    ToolCall,
)
from durable_tools._activities._types import (
    COMPACT_ACTIVITY,
    CatalogRequest,
    CompactCall,
    Compacted,
    ModelCall,
    ModelTurn,
    PreflightRequest,
    PreflightResult,
    ToolInvocation,
)
from durable_tools._wire import WireModel
from durable_tools.messages import ModelRequest, ModelResponse, Usage
from durable_tools.tools import ToolOutcome
from durable_tools.workflows import AgentInput

HISTORIES = sorted((Path(__file__).parent / "workflows" / "histories").glob("*.json"))
RECORDED_FULL = frozenset(
    {"approvals", "callbacks", "continued", "older_worker", "packed_catalog", "subagent"}
    | {"tools_and_repairs"}
)
"""Histories recorded before the wire change, in the full form; every later one is short."""
CONVERTER = pydantic_data_converter.payload_converter


def _wire(value: BaseModel) -> bytes:
    """The bytes the data converter records for `value`."""
    return CONVERTER.to_payloads([value])[0].data


def _read(data: bytes, cls: type[BaseModel]) -> Any:
    payload = Payload(metadata={"encoding": b"json/plain"}, data=data)
    return CONVERTER.from_payloads([payload], [cls])[0]


def _full(value: BaseModel) -> bytes:
    """The full form, as the converter wrote it before wire types were trimmed."""
    return to_json(value.model_dump())


REF = ArtifactRef(uri="file:///a/ab/abcd", size=10, sha256="ab" * 32)
SAMPLES: list[BaseModel] = [
    ToolInvocation(
        call_id="c1",
        tool_name="lookup",
        arguments={"key": "k", "none": None},
        workflow_id="run-1",
        idempotency_key="run-1/c1",
        output_limit_bytes=16_000,  # explicitly the default: still left out
    ),
    ToolInvocation(
        call_id="c2",
        tool_name="ship",
        arguments={},
        workflow_id="run-1",
        identity=Identity(user="u1"),
        idempotency_key="run-1/c2#2",
        attempt_offset=3,
        output_limit_bytes=512,
        grant_ref="g-1",
        input_responses={"q": "yes"},
        request_state="s",
    ),
    ToolOutcome(call_id="c1", tool_name="lookup", content="value", elapsed_ms=0.3),
    ToolOutcome(
        call_id="c1",
        tool_name="lookup",
        content="boom",
        is_error=True,
        error_kind="execution",
        structured={"a": [1, None]},
        artifacts=[REF],
        elapsed_ms=12.5,
        attempt=2,
    ),
    ModelCall(
        request=ModelRequest(
            model="scripted:x.json",
            messages=[
                Message.user("hi"),
                Message.tool("c1", "lookup", "value", is_error=False, at=datetime.now(UTC)),
            ],
            turn=2,
            run_id="run-1",
        ),
        base=REF,
        base_length=2,
        tools_ref=REF,
    ),
    ModelTurn(
        response=ModelResponse(
            message=Message(role="assistant", tool_calls=[ToolCall(id="c1", name="lookup")]),
            finish_reason="tool_calls",
            usage=Usage(input_tokens=5),
        ),
        snapshot=REF,
        snapshot_length=4,
    ),
    CatalogRequest(),
    PreflightRequest(call_id="c1", tool_name="t", arguments={}, workflow_id="w"),
    PreflightResult(approval_required=True),
    AgentInput(prompt="go", config=AgentConfig(model="m")),
    AgentInput(
        prompt="go",
        config=AgentConfig(
            model="m",
            name="billing",
            limits=Limits(max_turns=3),
            approval=ApprovalPolicy(),
            stream_tokens=True,
        ),
        identity=Identity(user="u"),
        depth=1,
        revision=1,
    ),
]


@pytest.mark.parametrize("value", SAMPLES, ids=lambda v: type(v).__name__)
def test_short_and_full_forms_decode_to_equal_objects(value: BaseModel) -> None:
    short, full = _wire(value), _full(value)
    assert _read(short, type(value)) == value
    assert _read(full, type(value)) == value
    assert len(short) <= len(full)


def test_defaults_are_left_out_and_set_values_kept() -> None:
    invocation = json.loads(_wire(SAMPLES[0]))
    assert invocation == {
        "call_id": "c1",
        "tool_name": "lookup",
        # A tool's own arguments are data, not fields: their nulls stay.
        "arguments": {"key": "k", "none": None},
        "workflow_id": "run-1",
        "idempotency_key": "run-1/c1",
    }
    # Identity is not a wire model: when set, it is written whole.
    assert json.loads(_wire(SAMPLES[1]))["identity"] == {
        "tenant": None,
        "user": "u1",
        "session": None,
    }
    assert json.loads(_wire(AgentInput(prompt="go", config=AgentConfig(model="m")))) == {
        "prompt": "go",
        "config": {"model": "m"},
    }
    # False is not the default None: an explicit "not an error" survives.
    tool_message = json.loads(_wire(Message.tool("c1", "t", "x", is_error=False)))
    assert tool_message == {
        "role": "tool",
        "content": "x",
        "tool_call_id": "c1",
        "name": "t",
        "is_error": False,
    }


def test_python_dumps_keep_every_field() -> None:
    # Applications and the project's own merges (`{**base.model_dump(), **changes}`) read
    # Python dumps: only JSON is trimmed.
    for value in SAMPLES:
        assert set(value.model_dump()) == set(type(value).model_fields)


def test_an_explicit_default_equal_in_value_but_not_in_type_is_kept() -> None:
    class Sample(WireModel):
        flag: bool | int = 1
        ratio: float | int = 0.0

    assert json.loads(_wire(Sample(flag=True, ratio=0))) == {"flag": True, "ratio": 0}
    assert json.loads(_wire(Sample(flag=1, ratio=0.0))) == {}


def _payloads(event: dict[str, Any], key: str, field: str) -> list[bytes]:
    found = event.get(key, {}).get(field, {}).get("payloads", [])
    return [base64.b64decode(p["data"]) for p in found]


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
def test_recorded_full_form_payloads_decode_and_shrink(path: Path) -> None:
    events = json.loads(path.read_text())["events"]
    scheduled: dict[str, str] = {}
    decoded: list[tuple[bytes, BaseModel]] = []
    for event in events:
        for data in _payloads(event, "workflowExecutionStartedEventAttributes", "input"):
            decoded.append((data, _read(data, AgentInput)))
        attributes = event.get("activityTaskScheduledEventAttributes")
        if attributes:
            name = attributes["activityType"]["name"]
            scheduled[event["eventId"]] = name
            kind: type[BaseModel] = (
                ModelCall
                if name == "durable_tools.model"
                else CompactCall
                if name == COMPACT_ACTIVITY
                else CatalogRequest
                if name.startswith("durable_tools.catalog")
                else ToolInvocation
            )
            for data in _payloads(event, "activityTaskScheduledEventAttributes", "input"):
                decoded.append((data, _read(data, kind)))
        completed = event.get("activityTaskCompletedEventAttributes")
        if completed:
            name = scheduled[completed["scheduledEventId"]]
            if name.startswith("durable_tools.catalog"):
                continue  # the catalog's own types are not wire models
            kind = (
                ModelTurn
                if name == "durable_tools.model"
                else Compacted
                if name == COMPACT_ACTIVITY
                else ToolOutcome
            )
            for data in _payloads(event, "activityTaskCompletedEventAttributes", "result"):
                decoded.append((data, _read(data, kind)))
    assert decoded
    for _, value in decoded:
        short = _wire(value)
        assert _read(short, type(value)) == value
        # Not compared with the recorded bytes: types gained fields since they were recorded.
        assert len(short) <= len(_full(value))
    full = [b'"grant_ref":null' in data or b'"base_length":0' in data for data, _ in decoded]
    if path.stem not in RECORDED_FULL:  # recorded short: they stay as written
        assert not any(full)
        assert all(data == _wire(value) for data, value in decoded)
    else:  # the full form, nulls and defaults spelled out: what older workers wrote
        assert any(full)
