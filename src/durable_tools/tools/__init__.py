"""The tool layer: plain Python, testable without a server.

Specs, the registry, schemas, validation, errors and result formatting live here.
Nothing in this package imports Temporal's worker or client.
"""

from ._artifacts import (
    ArtifactStore,
    FileSystemArtifactStore,
    InMemoryArtifactStore,
    default_artifact_store,
)
from ._catalog import filter_specs, search_specs
from ._classify import classify_exception, error_message_for_model, parse_retry_after
from ._context import Identity, Injected, MissingResource, ToolContext
from ._errors import (
    Cancelled,
    Denied,
    ErrorKind,
    InvalidArguments,
    NeedsAuthorization,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
    ToolTimeout,
)
from ._events import (
    TOOL_COMPLETED,
    TOOL_FAILED,
    TOOL_INVALID_ARGS,
    TOOL_POLICY_EXHAUSTED,
    TOOL_SKIPPED,
    TOOL_STARTED,
    ToolEvent,
)
from ._formatting import (
    abridge_arguments,
    error_outcome,
    format_result,
    redact_arguments,
    to_tool_result,
)
from ._middleware import Middleware, Skip, ToolCallInfo, ToolFailure
from ._names import ToolRegistrationError
from ._registry import ApprovalPredicate, RegisteredTool, ToolOptions, ToolRegistry
from ._results import ArtifactRef, ContentBlock, ToolOutcome, ToolResult
from ._schema_tools import SchemaHandler, SchemaTool
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
from ._validation import parse_arguments, validate_arguments, validate_output

__all__ = [
    "TOOL_COMPLETED",
    "TOOL_FAILED",
    "TOOL_INVALID_ARGS",
    "TOOL_POLICY_EXHAUSTED",
    "TOOL_SKIPPED",
    "TOOL_STARTED",
    "ApprovalMode",
    "ApprovalPredicate",
    "ArtifactRef",
    "ArtifactStore",
    "Cancelled",
    "ContentBlock",
    "Denied",
    "ErrorKind",
    "ExecutionPolicy",
    "FileSystemArtifactStore",
    "Identity",
    "InMemoryArtifactStore",
    "Injected",
    "InvalidArguments",
    "LoadingMode",
    "Middleware",
    "MissingResource",
    "NeedsAuthorization",
    "OAuthRequirement",
    "RegisteredTool",
    "RetrySpec",
    "Safety",
    "SchemaHandler",
    "SchemaTool",
    "SideEffect",
    "Skip",
    "ToolCallInfo",
    "ToolContext",
    "ToolError",
    "ToolEvent",
    "ToolExecutionError",
    "ToolFailure",
    "ToolNotFound",
    "ToolOptions",
    "ToolOutcome",
    "ToolRegistrationError",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "ToolTimeout",
    "abridge_arguments",
    "classify_exception",
    "default_artifact_store",
    "error_message_for_model",
    "error_outcome",
    "filter_specs",
    "format_result",
    "parse_arguments",
    "parse_retry_after",
    "redact_arguments",
    "search_specs",
    "to_tool_result",
    "validate_arguments",
    "validate_output",
]
