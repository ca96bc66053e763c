"""Model adapters: one interface, resolved from a spec such as `openai:gpt-4o-mini`.

The model activity calls `await resolve_model(request.model).complete(request)`. Built in:

- `scripted:PATH` plays back a JSON script, step `i` answering turn `i` (tests, demos).
- `openai:MODEL` speaks the OpenAI Chat Completions API to `OPENAI_BASE_URL`, which also
  covers vLLM, Ollama, llama.cpp and other compatible servers.

Every failure is a `ModelError`, a Temporal `ApplicationError` that says whether a retry
may help and how long to wait.
"""

from ._base import (
    ModelAdapter,
    ModelAdapterFactory,
    register_model_adapter,
    registered_model_prefixes,
    resolve_model,
    unregister_model_adapter,
)
from ._errors import ModelError
from ._openai import (
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_OPENAI_TIMEOUT,
    OpenAIChatModel,
    aclose_shared_clients,
    parse_retry_after,
)
from ._scripted import Script, ScriptedModel, ScriptedStep, ScriptedToolCall, load_script

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_OPENAI_TIMEOUT",
    "ModelAdapter",
    "ModelAdapterFactory",
    "ModelError",
    "OpenAIChatModel",
    "Script",
    "ScriptedModel",
    "ScriptedStep",
    "ScriptedToolCall",
    "aclose_shared_clients",
    "load_script",
    "parse_retry_after",
    "register_model_adapter",
    "registered_model_prefixes",
    "resolve_model",
    "unregister_model_adapter",
]
