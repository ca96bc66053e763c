"""The tool layer: plain Python, testable without a server.

Specs, the registry, schemas, validation, errors and result formatting live here.
Nothing in this package imports Temporal's worker or client. What a tool author imports
(`ToolRegistry`, `ToolContext`, `ToolSpec` and its policies, `ToolResult`, the errors) is
exported by the top-level `durable_tools`; this module lists the rest: middleware, artifact
stores, the tool catalog, the tool events' names.
"""

from ._artifacts import (
    ArtifactStore,
    FileSystemArtifactStore,
    InMemoryArtifactStore,
    default_artifact_store,
)
from ._catalog import filter_specs, search_specs
from ._context import (
    Identity as Identity,
    Injected as Injected,
    MissingResource,
    ToolContext as ToolContext,
)
from ._errors import (
    Cancelled as Cancelled,
    Denied as Denied,
    ErrorKind,
    InvalidArguments as InvalidArguments,
    NeedsAuthorization as NeedsAuthorization,
    ToolError as ToolError,
    ToolExecutionError as ToolExecutionError,
    ToolNotFound as ToolNotFound,
    ToolTimeout as ToolTimeout,
)
from ._events import (
    TOOL_COMPLETED,
    TOOL_FAILED,
    TOOL_INVALID_ARGS,
    TOOL_POLICY_EXHAUSTED,
    TOOL_REPLACED,
    TOOL_SKIPPED,
    TOOL_STARTED,
    TOOL_WITHDRAWN,
    ToolEvent,
)
from ._formatting import format_result
from ._middleware import Middleware, Skip as Skip, ToolCallInfo, ToolFailure
from ._names import ToolRegistrationError as ToolRegistrationError
from ._registry import ApprovalPredicate, RegisteredTool, ToolOptions, ToolRegistry as ToolRegistry
from ._results import (
    ArtifactRef as ArtifactRef,
    ContentBlock as ContentBlock,
    ToolOutcome,
    ToolResult as ToolResult,
)
from ._schema_tools import SchemaHandler, SchemaTool
from ._spec import (
    ApprovalMode as ApprovalMode,
    ExecutionPolicy as ExecutionPolicy,
    LoadingMode as LoadingMode,
    OAuthRequirement as OAuthRequirement,
    RetrySpec as RetrySpec,
    Safety as Safety,
    SideEffect as SideEffect,
    ToolSpec as ToolSpec,
)

__all__ = [
    "TOOL_COMPLETED",
    "TOOL_FAILED",
    "TOOL_INVALID_ARGS",
    "TOOL_POLICY_EXHAUSTED",
    "TOOL_REPLACED",
    "TOOL_SKIPPED",
    "TOOL_STARTED",
    "TOOL_WITHDRAWN",
    "ApprovalPredicate",
    "ArtifactStore",
    "ErrorKind",
    "FileSystemArtifactStore",
    "InMemoryArtifactStore",
    "Middleware",
    "MissingResource",
    "RegisteredTool",
    "SchemaHandler",
    "SchemaTool",
    "ToolCallInfo",
    "ToolEvent",
    "ToolFailure",
    "ToolOptions",
    "ToolOutcome",
    "default_artifact_store",
    "filter_specs",
    "format_result",
    "search_specs",
]
