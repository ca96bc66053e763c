"""Inputs and outputs of the activities the agent workflow schedules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from durable_tools._wire import WireModel
from durable_tools.messages import ModelRequest, ModelResponse, ModelSettings, Usage
from durable_tools.models._errors import CONTEXT_TOO_LONG
from durable_tools.protocol._client_tools import ClientTool
from durable_tools.protocol._compaction import ContextView
from durable_tools.tools._catalog_pack import PackedCatalog
from durable_tools.tools._context import Identity
from durable_tools.tools._results import ArtifactRef

__all__ = [
    "CATALOG_ACTIVITY",
    "CATALOG_UPDATE_ACTIVITY",
    "COMPACT_ACTIVITY",
    "CONTEXT_TOO_LONG",
    "MODEL_ACTIVITY",
    "PREFLIGHT_ACTIVITY",
    "SNAPSHOT_MISSING",
    "CatalogRequest",
    "CatalogUpdate",
    "CatalogUpdateRequest",
    "CompactCall",
    "Compacted",
    "ModelCall",
    "ModelTurn",
    "PreflightRequest",
    "PreflightResult",
    "ToolInvocation",
]

CATALOG_ACTIVITY = "durable_tools.catalog"
CATALOG_UPDATE_ACTIVITY = "durable_tools.catalog_update"
"""The local activity a running run reads its changed catalog with (`CatalogUpdate`)."""
MODEL_ACTIVITY = "durable_tools.model"
PREFLIGHT_ACTIVITY = "durable_tools.preflight"
COMPACT_ACTIVITY = "durable_tools.compact"
SNAPSHOT_MISSING = "ConversationSnapshotMissing"
"""Error type of the model activity when a conversation snapshot is not in the store."""


class CatalogRequest(WireModel):
    """Which tools a run may see."""

    identity: Identity = Identity()
    granted_scopes: list[str] = Field(default_factory=list)
    tools: list[str] | None = None
    """Names the agent asks for; None for every visible tool."""
    client_tools: list[ClientTool] = Field(default_factory=list)
    """Tools the run's client declares (`AgentConfig.client_tools`): callback tools of the
    run, added after the worker's."""


class CatalogUpdateRequest(WireModel):
    """Input of the catalog update activity: the run's catalog request and the registry
    version its catalog came from."""

    request: CatalogRequest
    known: str = Field(max_length=64)


class CatalogUpdate(WireModel):
    """Output of the catalog update activity."""

    version: str
    """The worker's registry version now (`ToolRegistry.version`)."""
    packed: PackedCatalog | None = None
    """The run's catalog as the worker has it now; None when `version` is the known one."""


class ModelCall(WireModel):
    """Input of the model activity: the new messages, after a stored conversation snapshot."""

    request: ModelRequest
    """`request.messages` holds only the messages added after `base`."""
    base: ArtifactRef | None = None
    """Snapshot of the conversation so far (see `ConversationSnapshots`); None sends it all."""
    base_length: int = 0
    """How many messages `base` holds."""
    tools_ref: ArtifactRef | None = None
    """Stored tool definitions, sent instead of `request.tools` after a run's first call."""
    stream: bool = False
    """Publish the answer's text live to the run's token stream (`AgentConfig.stream_tokens`)."""
    context: ContextView | None = None
    """Send the model this view of the conversation (compacted); the snapshot keeps it all."""


class ModelTurn(WireModel):
    """Output of the model activity."""

    response: ModelResponse
    snapshot: ArtifactRef | None = None
    """The conversation including the response, for the next call to build on."""
    snapshot_length: int = 0
    tools_ref: ArtifactRef | None = None
    """Set when the call stored the definitions it was sent, for the next calls to refer to."""
    catalog_version: str | None = None
    """The worker's registry version, when this worker has not told the run it yet
    (`_versions_told`): a run whose catalog came from another version reads it again
    before its next turn."""


class CompactCall(WireModel):
    """Input of the compact activity: which older messages to summarise, and with what.

    The messages are read from the snapshot `base`, never sent: the activity folds the
    messages from `previous.until` (or the head) up to at most `keep_from` into one
    summary, together with the previous summary.
    """

    model: str
    """The summariser's model spec."""
    base: ArtifactRef
    base_length: int = Field(ge=1)
    keep_from: int = Field(ge=1)
    """The summarised range ends at or before this index: the messages from it on stay."""
    previous: ContextView | None = None
    """The run's current view, whose summary is folded into the new one."""
    instructions: str
    """The summariser's system prompt."""
    settings: ModelSettings | None = None
    max_input_chars: int = Field(ge=1_000)
    """Longest transcript shown to the summariser; a longer one loses its middle."""
    turn: int = 0
    """The chain's count of compactions so far (a scripted summariser answers by it)."""
    run_id: str = ""


class Compacted(WireModel):
    """Output of the compact activity."""

    head: int = 0
    """Leading system messages kept as they are."""
    until: int = 0
    """The first message kept after the summary; 0 when nothing could be summarised."""
    summary: str = ""
    """The summariser's text (not yet framed as a message)."""
    replaced: int = 0
    """Messages newly folded into the summary."""
    tokens_replaced: int = 0
    """Estimated tokens of those messages."""
    kept_tokens: int = 0
    """Estimated tokens of the head and of the kept messages up to `base_length`."""
    usage: Usage = Field(default_factory=Usage)
    """The summariser's tokens."""
    summary_ref: ArtifactRef | None = None
    """The whole summary in the artifact store, for the audit event."""


class ToolInvocation(WireModel):
    """Input of a tool activity: validated arguments and who the call is for.

    Holds identifiers only. Secrets, tokens and clients are resolved on the worker.
    """

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    workflow_id: str
    identity: Identity = Identity()
    idempotency_key: str
    attempt_offset: int = 0
    """Attempts made by earlier activity executions of the same call (workflow-driven retries)."""
    output_limit_bytes: int = 16_000
    grant_ref: str | None = None
    """Opaque reference to the OAuth grant the call runs with, never the token."""
    input_responses: dict[str, Any] | None = None
    """The user's answers to an MCP server's questions (elicitation), by question key."""
    request_state: str | None = None
    """The MCP server's opaque state from the call's previous round, echoed back."""
    approved_schema: str | None = None
    """For a call a person approved: `schema_digest` of the input schema the workflow
    checked the arguments against. If the worker's tool has another schema by now, the
    approved arguments run as they are (the approval binds what the approver saw)."""
    approved_safety: str | None = None
    """For a call a person (or a standing grant) approved: `safety_digest` of the tool as
    the approver saw it. If the worker's tool may do other things by now (it runs shell
    commands since), the call is refused and never runs. None: not checked (calls
    scheduled by code before this field)."""


class PreflightRequest(WireModel):
    """Worker-side checks before a call is scheduled: approval predicate, OAuth grant."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    workflow_id: str
    identity: Identity = Identity()
    force_reauthorization: bool = False
    """The tool reported its token revoked: start a new authorization even if a grant exists."""
    handler_prefix: str = ""
    """What the run's handler names start with (an embedded `AgentLoop`'s prefix): the
    OAuth callback signals `handler_prefix + "authorization_completed"` on `workflow_id`.
    Left out of the payload when empty, as runs before it recorded it; the activity checks
    it (`check_handler_prefix`)."""


class PreflightResult(WireModel):
    """What the preflight found."""

    approval_required: bool = False
    authorization_url: str | None = None
    """Set when the run must pause for the user to authorize."""
    authorization_expires_at: datetime | None = None
    """When `authorization_url` stops working, if the broker says."""
    grant_ref: str | None = None
    summary: str | None = None
    """The tool's summary function's line for the approver (`approval_summary_on_worker`)."""
