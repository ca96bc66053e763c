"""Model specs resolve to adapters; the package exports what it means to."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from temporalio.api.failure.v1 import Failure
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError

import durable_tools.models as models
from durable_tools import Message
from durable_tools.messages import ModelRequest, ModelResponse
from durable_tools.models import (
    AnthropicModel,
    ModelAdapter,
    ModelError,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ScriptedModel,
    register_model_adapter,
    registered_model_prefixes,
    resolve_model,
    unregister_model_adapter,
)


class EchoModel:
    def __init__(self, rest: str) -> None:
        self.rest = rest

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=Message(role="assistant", content=f"{self.rest}"))


@pytest.fixture
def echo_prefix() -> Iterator[str]:
    register_model_adapter("echo", EchoModel)
    try:
        yield "echo"
    finally:
        unregister_model_adapter("echo")


def test_builtin_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert isinstance(resolve_model("scripted:/tmp/x.json"), ScriptedModel)
    model = resolve_model("openai:gpt-4o-mini")
    assert isinstance(model, OpenAIChatModel)
    assert model.model == "gpt-4o-mini"
    assert model.base_url == "https://api.openai.com/v1"
    # Model names may contain colons (ollama tags): only the first one splits.
    tagged = resolve_model("openai:llama3.1:8b")
    assert isinstance(tagged, OpenAIChatModel)
    assert tagged.model == "llama3.1:8b"
    responses = resolve_model("openai-responses:gpt-5-mini")
    assert isinstance(responses, OpenAIResponsesModel) and responses.model == "gpt-5-mini"
    claude = resolve_model("anthropic:claude-sonnet-4-5")
    assert isinstance(claude, AnthropicModel) and claude.model == "claude-sonnet-4-5"


@pytest.mark.parametrize("spec", ["gpt-4o", "claude:sonnet", ":x", ""])
def test_unknown_prefix_names_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError) as caught:
        resolve_model(spec)
    assert "scripted:PATH" in str(caught.value)
    assert "openai:MODEL" in str(caught.value)
    assert "openai-responses:MODEL" in str(caught.value)
    assert "anthropic:MODEL" in str(caught.value)


@pytest.mark.parametrize("spec", ["openai:", "scripted:", "anthropic:", "openai-responses:"])
def test_empty_rest_is_rejected(spec: str) -> None:
    with pytest.raises(ValueError, match="incomplete"):
        resolve_model(spec)


async def test_registered_prefix(echo_prefix: str) -> None:
    assert "echo" in registered_model_prefixes()
    model = resolve_model("echo:hello")
    assert isinstance(model, ModelAdapter)
    response = await model.complete(ModelRequest(model="echo:hello", messages=[]))
    assert response.message.content == "hello"
    with pytest.raises(ValueError, match="already registered"):
        register_model_adapter("echo", EchoModel)
    with pytest.raises(ValueError) as caught:
        resolve_model("nope:x")
    assert "echo:..." in str(caught.value)


def test_unregister_restores_builtins() -> None:
    register_model_adapter("openai", EchoModel, replace=True)
    try:
        assert isinstance(resolve_model("openai:x"), EchoModel)
    finally:
        unregister_model_adapter("openai")
    assert isinstance(resolve_model("openai:x"), OpenAIChatModel)
    unregister_model_adapter("never-registered")


@pytest.mark.parametrize("prefix", ["", "a:b", " x"])
def test_bad_prefixes(prefix: str) -> None:
    with pytest.raises(ValueError):
        register_model_adapter(prefix, EchoModel)


def test_exports() -> None:
    assert len(set(models.__all__)) == len(models.__all__)  # ruff (RUF022) keeps it sorted
    public = {name for name in dir(models) if not name.startswith("_")}
    # Everything public is exported, save the private submodules' names.
    assert public - set(models.__all__) == set()
    for name in models.__all__:
        obj = getattr(models, name)
        module = getattr(obj, "__module__", None)
        if module is not None and module.startswith("durable_tools.models."):
            submodule = __import__(module, fromlist=["__all__"])
            assert name in submodule.__all__


async def test_model_error_becomes_an_application_failure_temporal_honours() -> None:
    # The model activity lets ModelError propagate: Temporal must read its classification.
    converter = pydantic_data_converter
    retryable = Failure()
    await converter.encode_failure(
        ModelError("HTTP 429: slow down", retryable=True, retry_after=2.5, status=429), retryable
    )
    info = retryable.application_failure_info
    assert retryable.message == "HTTP 429: slow down"
    assert (info.type, info.non_retryable) == ("ModelError", False)
    assert info.next_retry_delay.ToTimedelta() == timedelta(seconds=2.5)
    decoded = await converter.decode_failure(retryable)
    assert isinstance(decoded, ApplicationError)
    assert decoded.details == ({"retryable": True, "retry_after": 2.5, "status": 429},)

    final = Failure()
    await converter.encode_failure(ModelError("HTTP 400: bad", retryable=False, status=400), final)
    assert final.application_failure_info.non_retryable
    assert not final.application_failure_info.HasField("next_retry_delay")
