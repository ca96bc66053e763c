"""Model adapters: one interface, resolved from a spec such as `openai:gpt-4o-mini`.

The model activity calls `await resolve_model(request.model).complete(request)`. Built in:

- `scripted:PATH` plays back a JSON script, step `i` answering turn `i` (tests, demos).
- `openai:MODEL` speaks the OpenAI Chat Completions API to `OPENAI_BASE_URL`, which also
  covers vLLM, Ollama, llama.cpp and other compatible servers (the `openai` extra).
- `openai-responses:MODEL` speaks OpenAI's Responses API (the `openai` extra).
- `anthropic:MODEL` speaks Anthropic's Messages API (the `anthropic` extra).
- `pydantic-ai:PROVIDER:MODEL` reaches every other provider through Pydantic AI's model
  classes (the `pydantic-ai` extra), e.g. `pydantic-ai:google-gla:gemini-2.5-pro`.

The provider adapters go through the official SDKs with their retries off. Every failure
is a `ModelError`, a Temporal `ApplicationError` that says whether a retry may help and
how long to wait; Temporal's retry policy is the only one. See docs/models.md.
"""

from ._anthropic import (
    DEFAULT_ANTHROPIC_BASE_URL,
    DEFAULT_ANTHROPIC_MAX_TOKENS,
    DEFAULT_ANTHROPIC_TIMEOUT,
    AnthropicModel,
)
from ._base import (
    ModelAdapter,
    ModelAdapterFactory,
    register_model_adapter,
    registered_model_prefixes,
    resolve_model,
    unregister_model_adapter,
)
from ._errors import CONTEXT_TOO_LONG, ModelError
from ._openai import DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_TIMEOUT, OpenAIChatModel
from ._openai_responses import OpenAIResponsesModel
from ._pydantic_ai import PydanticAIModel
from ._scripted import Script, ScriptedModel, ScriptedStep, ScriptedToolCall, load_script
from ._sdk import aclose_shared_clients
from ._windows import KNOWN_CONTEXT_WINDOWS, context_window

__all__ = [
    "CONTEXT_TOO_LONG",
    "DEFAULT_ANTHROPIC_BASE_URL",
    "DEFAULT_ANTHROPIC_MAX_TOKENS",
    "DEFAULT_ANTHROPIC_TIMEOUT",
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_OPENAI_TIMEOUT",
    "KNOWN_CONTEXT_WINDOWS",
    "AnthropicModel",
    "ModelAdapter",
    "ModelAdapterFactory",
    "ModelError",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "PydanticAIModel",
    "Script",
    "ScriptedModel",
    "ScriptedStep",
    "ScriptedToolCall",
    "aclose_shared_clients",
    "context_window",
    "load_script",
    "register_model_adapter",
    "registered_model_prefixes",
    "resolve_model",
    "unregister_model_adapter",
]
