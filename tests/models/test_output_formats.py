"""`ModelRequest.output` in each adapter's request body: the provider's native structured
output field, and nothing when no schema is asked for (older request bodies unchanged)."""

from __future__ import annotations

import pytest

from durable_tools import Message
from durable_tools.messages import ModelRequest, ModelSettings, OutputSchema
from durable_tools.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


def request(output: OutputSchema | None, **settings: object) -> ModelRequest:
    return ModelRequest(
        model="x",
        messages=[Message.user("hi")],
        output=output,
        settings=ModelSettings.model_validate(settings) if settings else None,
    )


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")


def test_chat_completions_response_format() -> None:
    output = OutputSchema.of(SCHEMA, name="verdict", description="Yes or no.", strict=True)
    body = OpenAIChatModel("gpt-test").build_body(request(output))
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "schema": SCHEMA,
            "strict": True,
            "description": "Yes or no.",
        },
    }
    assert "response_format" not in OpenAIChatModel("gpt-test").build_body(request(None))


def test_responses_text_format_keeps_other_text_settings() -> None:
    output = OutputSchema.of(SCHEMA, name="verdict")
    body = OpenAIResponsesModel("gpt-test").build_body(
        request(output, extra={"text": {"verbosity": "low"}})
    )
    assert body["text"] == {
        "verbosity": "low",
        "format": {"type": "json_schema", "name": "verdict", "schema": SCHEMA, "strict": False},
    }
    assert "text" not in OpenAIResponsesModel("gpt-test").build_body(request(None))


def test_anthropic_output_config_in_native_mode() -> None:
    output = OutputSchema.of(SCHEMA, mode="native")
    body = AnthropicModel("claude-test").build_body(request(output))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert "output_config" not in AnthropicModel("claude-test").build_body(request(None))
