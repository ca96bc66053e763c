"""durable-tools: run LLM-agent tools durably on Temporal.

What a user's code needs is exported here, from one namespace:

- defining tools: `ToolRegistry`, `ToolContext`, `Injected`, `ToolSpec` and its policies
  (`RetrySpec`, `ExecutionPolicy`, `Safety`, ...), `ToolResult`, and the errors a tool
  raises (`ToolError`, `Denied`, `NeedsAuthorization`, ...);
- configuring the agent: `AgentConfig` and its parts (`Limits`, `ApprovalPolicy`,
  `CompactionConfig`, `SessionConfig`, `NotificationConfig`, ...);
- running workers: `connect` (a client with the right data converter), `build_worker`,
  `DurableToolsPlugin` (the same for an application's own Temporal client and workers);
- starting, deciding and reading runs: `DurableTools`, `AgentRun`, what they return
  (`AgentResult`, `RunStatus`, `RunEvent`, `ToolCallRecord`, ...) and the errors of the
  decide path (`DecisionError` and its subclasses).

Specialised modules keep their own names: `durable_tools.models` (model adapters),
`durable_tools.messages` (the conversation types, for adapter authors),
`durable_tools.workflows` (embedding the agent loop, policy extensions),
`durable_tools.worker` (worker-side objects), `durable_tools.sources` (MCP, OpenAPI, A2A),
`durable_tools.oauth`, `durable_tools.inbox`, `durable_tools.codec`, `durable_tools.events`,
`durable_tools.streaming`, `durable_tools.workspace`, `durable_tools.telemetry`, ...
Each public name has one public path: a name exported here is in no other module's
`__all__`.

`import durable_tools` imports nothing else (so it stays Temporal-free): each name is
imported on first use (PEP 562).
"""

import importlib
import warnings
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durable_tools.client import (
        AgentRun,
        AlreadyDecided,
        AmbiguousRequest,
        DecisionError,
        DecisionRecorded,
        DecisionTimedOut,
        DurableTools,
        InputAnswerRejected,
        MalformedDecision,
        NotADecider,
        NothingPending,
        PendingRequest,
        RejectedByRun,
        RunEnded,
        RunNotFound,
        RunSummary,
        RunUnreadable,
        ScheduleSummary,
        SentMessage,
        SessionRefused,
        StaleRequest,
        ToolProgress,
        WorkerUnavailable,
        answer_input,
        progress_in,
    )
    from durable_tools.connection import (
        connect,
    )
    from durable_tools.messages import (
        Message,
        ToolCall,
    )
    from durable_tools.plugin import (
        DurableToolsPlugin,
    )
    from durable_tools.tools import (
        ApprovalMode,
        ArtifactRef,
        Cancelled,
        ContentBlock,
        Denied,
        ExecutionPolicy,
        Identity,
        Injected,
        InvalidArguments,
        LoadingMode,
        NeedsAuthorization,
        OAuthRequirement,
        RetrySpec,
        Safety,
        SideEffect,
        Skip,
        ToolContext,
        ToolError,
        ToolExecutionError,
        ToolNotFound,
        ToolRegistrationError,
        ToolRegistry,
        ToolResult,
        ToolSpec,
        ToolTimeout,
    )
    from durable_tools.worker import (
        build_worker,
    )
    from durable_tools.workflows import (
        AgentConfig,
        AgentResult,
        ApprovalPolicy,
        AuthorizationPolicy,
        AutoApproval,
        CodeMode,
        CompactionConfig,
        ExecutionStrategy,
        GrantRequest,
        Limits,
        NotificationConfig,
        PendingApproval,
        PendingInput,
        Price,
        RunEvent,
        RunStatus,
        SessionConfig,
        SessionReply,
        SlackTarget,
        StandingGrant,
        ToolCallRecord,
        WebhookTarget,
    )

__version__ = "0.1.0"

__all__ = [
    "AgentConfig",
    "AgentResult",
    "AgentRun",
    "AlreadyDecided",
    "AmbiguousRequest",
    "ApprovalMode",
    "ApprovalPolicy",
    "ArtifactRef",
    "AuthorizationPolicy",
    "AutoApproval",
    "Cancelled",
    "CodeMode",
    "CompactionConfig",
    "ContentBlock",
    "DecisionError",
    "DecisionRecorded",
    "DecisionTimedOut",
    "Denied",
    "DurableTools",
    "DurableToolsPlugin",
    "ExecutionPolicy",
    "ExecutionStrategy",
    "GrantRequest",
    "Identity",
    "Injected",
    "InputAnswerRejected",
    "InvalidArguments",
    "Limits",
    "LoadingMode",
    "MalformedDecision",
    "Message",
    "NeedsAuthorization",
    "NotADecider",
    "NothingPending",
    "NotificationConfig",
    "OAuthRequirement",
    "PendingApproval",
    "PendingInput",
    "PendingRequest",
    "Price",
    "RejectedByRun",
    "RetrySpec",
    "RunEnded",
    "RunEvent",
    "RunNotFound",
    "RunStatus",
    "RunSummary",
    "RunUnreadable",
    "Safety",
    "ScheduleSummary",
    "SentMessage",
    "SessionConfig",
    "SessionRefused",
    "SessionReply",
    "SideEffect",
    "Skip",
    "SlackTarget",
    "StaleRequest",
    "StandingGrant",
    "ToolCall",
    "ToolCallRecord",
    "ToolContext",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFound",
    "ToolProgress",
    "ToolRegistrationError",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "ToolTimeout",
    "WebhookTarget",
    "WorkerUnavailable",
    "__version__",
    "answer_input",
    "build_worker",
    "connect",
    "progress_in",
]

_EXPORTS = MappingProxyType(
    {
        **dict.fromkeys(
            (
                "AgentRun",
                "AlreadyDecided",
                "AmbiguousRequest",
                "DecisionError",
                "DecisionRecorded",
                "DecisionTimedOut",
                "DurableTools",
                "InputAnswerRejected",
                "MalformedDecision",
                "NotADecider",
                "NothingPending",
                "PendingRequest",
                "RejectedByRun",
                "RunEnded",
                "RunNotFound",
                "RunSummary",
                "RunUnreadable",
                "ScheduleSummary",
                "SentMessage",
                "SessionRefused",
                "StaleRequest",
                "ToolProgress",
                "WorkerUnavailable",
                "answer_input",
                "progress_in",
            ),
            "durable_tools.client",
        ),
        **dict.fromkeys(
            ("connect",),
            "durable_tools.connection",
        ),
        **dict.fromkeys(
            (
                "Message",
                "ToolCall",
            ),
            "durable_tools.messages",
        ),
        **dict.fromkeys(
            ("DurableToolsPlugin",),
            "durable_tools.plugin",
        ),
        **dict.fromkeys(
            (
                "ApprovalMode",
                "ArtifactRef",
                "Cancelled",
                "ContentBlock",
                "Denied",
                "ExecutionPolicy",
                "Identity",
                "Injected",
                "InvalidArguments",
                "LoadingMode",
                "NeedsAuthorization",
                "OAuthRequirement",
                "RetrySpec",
                "Safety",
                "SideEffect",
                "Skip",
                "ToolContext",
                "ToolError",
                "ToolExecutionError",
                "ToolNotFound",
                "ToolRegistrationError",
                "ToolRegistry",
                "ToolResult",
                "ToolSpec",
                "ToolTimeout",
            ),
            "durable_tools.tools",
        ),
        **dict.fromkeys(
            ("build_worker",),
            "durable_tools.worker",
        ),
        **dict.fromkeys(
            (
                "AgentConfig",
                "AgentResult",
                "ApprovalPolicy",
                "AuthorizationPolicy",
                "AutoApproval",
                "CodeMode",
                "CompactionConfig",
                "ExecutionStrategy",
                "GrantRequest",
                "Limits",
                "NotificationConfig",
                "PendingApproval",
                "PendingInput",
                "Price",
                "RunEvent",
                "RunStatus",
                "SessionConfig",
                "SessionReply",
                "SlackTarget",
                "StandingGrant",
                "ToolCallRecord",
                "WebhookTarget",
            ),
            "durable_tools.workflows",
        ),
    }
)
"""The names exported here: name -> the module that defines it (imported on first use)."""

_MOVED = MappingProxyType(
    dict.fromkeys(("ModelRequest", "ModelResponse"), "durable_tools.messages")
)
"""Names the top level once re-exported and no longer does: name -> their one public path."""


def __getattr__(name: str) -> Any:
    # PEP 562: importing the home only on first use keeps `import durable_tools` from loading
    # temporalio (the client, worker and plugin need it).
    home = _EXPORTS.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"durable_tools.{name} is deprecated: import it from {home}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
