"""The scripted model: a JSON script answers each turn, deterministically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from durable_tools import Message
from durable_tools.messages import ModelRequest
from durable_tools.models import ModelError, ScriptedModel, load_script, resolve_model


def write_script(path: Path, data: Any) -> str:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def request(turn: int, model: str = "scripted:unused") -> ModelRequest:
    return ModelRequest(model=model, messages=[Message.user("go")], turn=turn)


SCRIPT = {
    "steps": [
        {"tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": "temporal", "n": 3}}]},
        {"tool_calls": [{"id": "c2", "name": "search", "arguments": '{"q": "unterminated'}]},
        {"text": "Here is what I found."},
    ]
}


async def test_steps_answer_their_turns(tmp_path: Path) -> None:
    path = write_script(tmp_path / "s.json", SCRIPT)
    model = resolve_model(f"scripted:{path}")
    assert isinstance(model, ScriptedModel)

    first = await model.complete(request(0))
    assert first.message.role == "assistant"
    assert first.message.content is None
    [call] = first.message.tool_calls
    assert (call.id, call.name) == ("c1", "search")
    # Dict arguments become JSON text that parses back to the same object.
    assert json.loads(call.arguments) == {"q": "temporal", "n": 3}
    assert first.finish_reason == "tool_calls"

    second = await model.complete(request(1))
    # String arguments reach validation verbatim, malformed JSON included.
    assert second.message.tool_calls[0].arguments == '{"q": "unterminated'

    third = await model.complete(request(2))
    assert third.message.content == "Here is what I found."
    assert third.message.tool_calls == []
    assert third.finish_reason == "stop"


async def test_turn_not_conversation_picks_the_step(tmp_path: Path) -> None:
    path = write_script(tmp_path / "s.json", SCRIPT)
    model = ScriptedModel(path)
    again = await model.complete(request(2))
    assert again.message.content == "Here is what I found."
    first = await model.complete(request(0))
    assert first.message.tool_calls[0].id == "c1"


async def test_missing_ids_are_deterministic(tmp_path: Path) -> None:
    path = write_script(
        tmp_path / "s.json",
        {
            "steps": [
                {"text": "thinking"},
                {
                    "text": "Let me look both up.",
                    "tool_calls": [
                        {"name": "a", "arguments": {}},
                        {"name": "b"},
                        {"id": "mine", "name": "c"},
                    ],
                },
            ]
        },
    )
    response = await ScriptedModel(path).complete(request(1))
    assert [c.id for c in response.message.tool_calls] == ["call_1_0", "call_1_1", "mine"]
    assert [c.arguments for c in response.message.tool_calls] == ["{}", "{}", "{}"]
    # A step may say something and call tools in the same turn.
    assert response.message.content == "Let me look both up."
    assert response.finish_reason == "tool_calls"
    again = await ScriptedModel(path).complete(request(1))
    assert again == response


async def test_finish_reason_and_usage_from_the_script(tmp_path: Path) -> None:
    path = write_script(
        tmp_path / "s.json",
        {
            "steps": [
                {
                    "text": "cut",
                    "finish_reason": "length",
                    "usage": {"input_tokens": 12, "output_tokens": 3},
                }
            ]
        },
    )
    response = await ScriptedModel(path).complete(request(0))
    assert response.finish_reason == "length"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)


async def test_turn_beyond_the_last_step_is_a_non_retryable_error(tmp_path: Path) -> None:
    path = write_script(tmp_path / "s.json", SCRIPT)
    with pytest.raises(ModelError) as caught:
        await ScriptedModel(path).complete(request(3))
    error = caught.value
    assert not error.retryable
    assert error.status is None
    assert path in error.message
    assert "turn 3" in error.message
    assert "3 step(s)" in error.message
    # Temporal reads these: the activity must not be retried.
    assert isinstance(error, ApplicationError)
    assert error.non_retryable
    assert error.type == "ModelError"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("", "not valid JSON"),
        ([{"text": "a list, not an object"}], "wrong shape"),
        ({"steps": "nope"}, "steps: Input should be a valid list"),
        ({"steps": []}, "steps: List should have at least 1 item"),
        ({"stpes": [{"text": "x"}]}, "steps: Field required"),
        (
            {"steps": [{"text": "ok"}, {"tool_calls": [{"arguments": {}}]}]},
            "steps.1.tool_calls.0.name",
        ),
        ({"steps": [{"tool_calls": [{"name": "x", "args": {}}]}]}, "steps.0.tool_calls.0.args"),
        ({"steps": [{"tool_calls": [{"name": "x", "arguments": 3}]}]}, "arguments"),
        ({"steps": [{}]}, "a step needs `text`, `tool_calls`, or both"),
    ],
)
async def test_malformed_scripts_name_the_path_and_the_problem(
    tmp_path: Path, content: Any, expected: str
) -> None:
    path = write_script(tmp_path / "bad.json", content)
    with pytest.raises(ModelError) as caught:
        await ScriptedModel(path).complete(request(0))
    assert not caught.value.retryable
    assert path in caught.value.message
    assert expected in caught.value.message


async def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nowhere.json")
    with pytest.raises(ModelError, match="file not found") as caught:
        await resolve_model(f"scripted:{path}").complete(request(0))
    assert path in caught.value.message
    assert not caught.value.retryable


def test_parsed_files_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    path = write_script(tmp_path / "s.json", {"steps": [{"text": "one"}]})
    first = load_script(path)
    assert load_script(path) is first

    write_script(tmp_path / "s.json", {"steps": [{"text": "two"}, {"text": "three"}]})
    # Force a distinct mtime: coarse file system clocks could otherwise hide the edit.
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = load_script(path)
    assert second is not first
    assert [step.text for step in second.steps] == ["two", "three"]


async def test_relative_paths_resolve_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_script(tmp_path / "rel.json", {"steps": [{"text": "relative"}]})
    monkeypatch.chdir(tmp_path)
    response = await resolve_model("scripted:rel.json").complete(request(0))
    assert response.message.content == "relative"
