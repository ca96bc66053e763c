"""What `DurableTools.start` sends: the run's resolved config, its search attributes and its
versioning override at start."""

from __future__ import annotations

import re
import weakref
from typing import Any

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import (
    AutoUpgradeVersioningOverride,
    SearchAttributePair,
    TypedSearchAttributes,
    VersioningOverride,
)
from temporalio.service import RPCError

from durable_tools import search_attributes as sa
from durable_tools.messages import ModelSettings, OutputSchema
from durable_tools.models import registered_model_prefixes
from durable_tools.protocol._models import MAX_MODEL_SPEC_CHARS
from durable_tools.workflows import AgentConfig, RunStatus

__all__ = [
    "MAX_MODEL_SPEC_CHARS",
    "check_model_spec",
    "start_attributes",
    "start_config",
    "start_summary",
    "start_versioning",
]

# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators: no
# provider's model name or file path holds one, and they would garble what operators read.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_model_spec(spec: str) -> None:
    """Refuse a model spec that no worker could resolve, before a run exists.

    The spec is `PROVIDER:MODEL` (`pydantic-ai:PROVIDER:MODEL`), with a provider this
    process knows: the built-in ones and those given to `register_model_adapter` here (a
    custom provider is registered where runs start as well as on the workers). Only the
    form is checked: whether a worker has the provider's SDK is the worker's to say.

    Raises:
        ValueError: one line naming what is wrong and the accepted forms.
    """
    if len(spec) > MAX_MODEL_SPEC_CHARS:
        raise ValueError(
            f"model spec too long ({len(spec)} characters, at most {MAX_MODEL_SPEC_CHARS})"
        )
    # The message stays one short plain line whatever the spec holds.
    shown = ascii(spec if len(spec) <= 200 else spec[:200] + "...")
    if _CONTROL.search(spec):
        raise ValueError(f"model spec {shown} holds control characters")
    prefix, colon, rest = spec.partition(":")
    known = registered_model_prefixes()
    if not colon or not prefix:
        raise ValueError(
            f"model spec {shown} is not PROVIDER:MODEL (providers: {', '.join(known)})"
        )
    if prefix not in known:
        raise ValueError(
            f"unknown model provider {prefix[:60]!a} in {shown}: expected one of "
            f"{', '.join(known)} (a custom one is registered with register_model_adapter "
            "where runs start, too)"
        )
    if prefix == "pydantic-ai":
        provider, _, name = rest.partition(":")
        parts, form = [provider, name], "pydantic-ai:PROVIDER:MODEL"
    else:
        parts, form = [rest], f"{prefix}:MODEL"
    if not all(part and part == part.strip() for part in parts):
        raise ValueError(f"model spec {shown} is incomplete or padded: expected {form}")


def start_config(
    client: Client,
    *,
    model: str | None,
    config: AgentConfig | None,
    model_settings: ModelSettings | None,
    output_type: Any,
) -> AgentConfig:
    """The config a run starts with: `config` (or one for `model`) with the overrides applied.

    Raises:
        ValueError: neither `model` nor `config` is given, or a model spec no worker could
            resolve (`check_model_spec`).
    """
    if config is None:
        if model is None:
            raise ValueError("give either model= or config=")
        config = AgentConfig(model=model)
    for spec in config.models:  # the fallback models too: each may have to answer
        check_model_spec(spec)
    if model_settings is not None:
        base = config.model_settings or ModelSettings()
        config = config.model_copy(update={"model_settings": base.merged(model_settings)})
    if client.data_converter.payload_codec and "summary_arguments" not in config.model_fields_set:
        config = config.model_copy(update={"summary_arguments": False})  # docs/encryption.md
    if output_type is not None:
        config = config.model_copy(update={"output_type": OutputSchema.coerce(output_type)})
    return config


async def start_attributes(client: Client, config: AgentConfig) -> TypedSearchAttributes:
    """The search attributes a run starts with (`DurableToolsTokens` only where registered)."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(sa.AGENT_NAME, config.name),
            SearchAttributePair(sa.AGENT_STATUS, RunStatus.RUNNING.value),
            # What the run's first status upsert would write: with them, it writes none.
            SearchAttributePair(sa.PENDING_APPROVALS, 0),
            SearchAttributePair(sa.AWAITING_TOOL, ""),
            *([SearchAttributePair(sa.TOKENS, 0)] if await _has_tokens(client) else []),
        ]
    )


def start_versioning(config: AgentConfig) -> VersioningOverride | None:
    """The versioning override a run starts with: auto-upgrade for `versioning="auto_upgrade"`.

    A workflow type declares one behaviour for all its runs, and a worker only declares one
    default: a run's own choice can only be an override at its start (see docs/operations.md).
    """
    return AutoUpgradeVersioningOverride() if config.versioning == "auto_upgrade" else None


_TOKENS_REGISTERED: weakref.WeakKeyDictionary[Client, bool] = weakref.WeakKeyDictionary()


async def _has_tokens(client: Client) -> bool:
    """Whether the namespace registers `DurableToolsTokens` (asked once per client).

    A run carries the attribute only then: namespaces set up before it existed keep working.
    """
    known = _TOKENS_REGISTERED.get(client)
    if known is None:
        try:
            found = await client.operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=client.namespace)
            )
            known = sa.TOKENS.name in found.custom_attributes
        except RPCError:  # no operator access (e.g. a cloud API key without it)
            known = False
        _TOKENS_REGISTERED[client] = known
    return known


_MARKDOWN = re.compile(r"([\\`*_\[\]()<>#!|~{}])")


def start_summary(config: AgentConfig, prompt: str) -> str:
    """A run's summary in the Temporal UI's list: `<agent>: <the prompt's start>`.

    The UI renders summaries as markdown and the prompt may come from an end user, so it
    is one line with markdown's punctuation escaped: a prompt cannot plant a link there.
    """
    name = _MARKDOWN.sub(r"\\\1", config.name[:64])
    if not prompt:
        return name
    line = _MARKDOWN.sub(r"\\\1", " ".join(prompt.split())[:120])
    return f"{name}: {line}"
