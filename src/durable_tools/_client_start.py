"""What `DurableTools.start` sends: the run's resolved config, its search attributes and its
versioning override at start."""

from __future__ import annotations

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
from durable_tools.workflows import AgentConfig, RunStatus

__all__ = ["start_attributes", "start_config", "start_versioning"]


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
        ValueError: neither `model` nor `config` is given.
    """
    if config is None:
        if model is None:
            raise ValueError("give either model= or config=")
        config = AgentConfig(model=model)
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
