"""What tools return, and the bounded outcome that goes back into the conversation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_tools._wire import WireModel

__all__ = ["ArtifactRef", "ContentBlock", "ToolNote", "ToolOutcome", "ToolResult", "is_sha256_hex"]


def is_sha256_hex(digest: str) -> bool:
    """Whether `digest` is a sha256 as the stores write it (64 lowercase hex digits): a
    store names an artifact by it, so nothing else may reach a path or an object key."""
    return len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)


class ArtifactRef(BaseModel):
    """A pointer to an output kept outside the history, in an artifact store."""

    model_config = ConfigDict(frozen=True)

    uri: str
    """Where the artifact is, e.g. `file:///var/lib/durable-tools/artifacts/ab/abcd...`."""
    size: int
    """Size in bytes."""
    sha256: str
    """Digest of the content; the store is content-addressed."""
    media_type: str = "application/json"


class ContentBlock(BaseModel):
    """One piece of model-visible content."""

    type: Literal["text", "json", "image", "artifact"] = "text"
    text: str | None = None
    data: Any = None
    artifact: ArtifactRef | None = None


class ToolResult(BaseModel):
    """A tool's full answer, when a plain value is not enough."""

    content: list[ContentBlock] = Field(default_factory=list)
    """What the model should read."""
    structured: Any = None
    """A JSON-able value, validated against the tool's output schema if it has one."""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    """Outputs kept out of band."""
    is_error: bool = False
    """The tool ran but reports a failure the model should see."""
    elapsed_ms: float | None = None
    """How long the call took; filled in by the executor when the tool leaves it empty."""
    skipped: str | None = None
    """Set when a before-hook skipped the call: the reason, which is also the content."""


class ToolNote(WireModel):
    """An entry a tool wrote to its run's audit stream (`ToolContext.emit`): recorded as a
    `tool.event` of its call."""

    detail: str
    """One line for people (cleaned and bounded by `emit`)."""
    data: Any = None
    """JSON data for machines (bounded by `emit`)."""


class ToolOutcome(WireModel):
    """What a tool call leaves in the run: bounded, redacted, ready for the model.

    This is the activity's result, so it is recorded in history: its size is bounded
    by the formatting limit whatever the tool returned.
    """

    call_id: str
    tool_name: str
    content: str
    """The text the model sees as the tool message."""
    is_error: bool = False
    error_kind: str | None = None
    """An `ErrorKind` value when the call failed."""
    structured: Any = None
    """The structured value when it is small enough to keep, else None."""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    elapsed_ms: float = 0.0
    attempt: int = 1
    skipped: str | None = None
    """Set when a before-hook skipped the call: the reason the model saw."""
    events: list[ToolNote] = Field(default_factory=list)
    """What the tool wrote to the run's audit stream during the attempt (`emit`),
    scrubbed of the call's secrets; the run records them before the call's closing event."""
