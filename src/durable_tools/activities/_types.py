"""Inputs and outputs of the activities the agent workflow schedules."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from durable_tools.messages import ModelRequest
from durable_tools.tools._context import Identity

__all__ = [
    "CATALOG_ACTIVITY",
    "MODEL_ACTIVITY",
    "PREFLIGHT_ACTIVITY",
    "CatalogRequest",
    "ModelCall",
    "PreflightRequest",
    "PreflightResult",
    "ToolInvocation",
]

CATALOG_ACTIVITY = "durable_tools.catalog"
MODEL_ACTIVITY = "durable_tools.model"
PREFLIGHT_ACTIVITY = "durable_tools.preflight"


class CatalogRequest(BaseModel):
    """Which tools a run may see."""

    identity: Identity = Identity()
    granted_scopes: list[str] = Field(default_factory=list)
    tools: list[str] | None = None
    """Names the agent asks for; None for every visible tool."""


class ModelCall(BaseModel):
    """Input of the model activity."""

    request: ModelRequest


class ToolInvocation(BaseModel):
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


class PreflightRequest(BaseModel):
    """Worker-side checks before a call is scheduled: approval predicate, OAuth grant."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    workflow_id: str
    identity: Identity = Identity()
    force_reauthorization: bool = False
    """The tool reported its token revoked: start a new authorization even if a grant exists."""


class PreflightResult(BaseModel):
    """What the preflight found."""

    approval_required: bool = False
    authorization_url: str | None = None
    """Set when the run must pause for the user to authorize."""
    grant_ref: str | None = None
