"""The tool layer: plain Python, testable without a server.

Specs, the registry, schemas, validation, errors and result formatting live here.
Nothing in this package imports Temporal's worker or client.
"""

from ._context import Identity, Injected, MissingResource, ToolContext
from ._errors import (
    Cancelled,
    Denied,
    Disposition,
    ErrorKind,
    InvalidArguments,
    NeedsAuthorization,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
    ToolTimeout,
)
from ._results import ArtifactRef, ContentBlock, ToolOutcome, ToolResult
from ._spec import (
    ApprovalMode,
    ExecutionPolicy,
    LoadingMode,
    OAuthRequirement,
    RetrySpec,
    Safety,
    SideEffect,
    ToolSpec,
)

__all__ = [
    "ApprovalMode",
    "ArtifactRef",
    "Cancelled",
    "ContentBlock",
    "Denied",
    "Disposition",
    "ErrorKind",
    "ExecutionPolicy",
    "Identity",
    "Injected",
    "InvalidArguments",
    "LoadingMode",
    "MissingResource",
    "NeedsAuthorization",
    "OAuthRequirement",
    "RetrySpec",
    "Safety",
    "SideEffect",
    "ToolContext",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFound",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "ToolTimeout",
]
