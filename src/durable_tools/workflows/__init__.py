"""The agent workflow and the data it takes, keeps and returns; the tool runtime on its own
(`ToolRuntime`) for workflows of your own and other agent frameworks."""

from durable_tools.protocol._code_mode import CodeMode
from durable_tools.protocol._compaction import CompactionConfig, ContextView
from durable_tools.protocol._input_types import PendingInput
from durable_tools.protocol._policy_types import (
    AutoApproval,
    BatchDecision,
    BatchItem,
    Constraint,
    CriteriaSet,
    Evaluation,
    EvaluationRequest,
    GrantRequest,
    GrantRevocation,
    StandingGrant,
)
from durable_tools.protocol._records import EventsPage, RunEvent, ToolCallRecord
from durable_tools.protocol._run_io import AgentInput, AgentResult, CarriedState, RunSnapshot
from durable_tools.protocol._session_types import SessionConfig, SessionReply, SessionView
from durable_tools.protocol._types import (
    AgentConfig,
    ApprovalPolicy,
    AuthorizationPolicy,
    ExecutionStrategy,
    Limits,
    NotificationConfig,
    PolicyChange,
    Price,
    RunStatus,
    SlackTarget,
    Steer,
    WebhookTarget,
)
from durable_tools.protocol._wait_types import (
    ApprovalDecision,
    AuthorizationCompleted,
    PendingApproval,
    PendingAuthorization,
)

from .loop._agent import AgentWorkflow
from .loop._embed import AgentLoop, run_agent, start_agent
from .loop._tool_runtime import ToolReply, ToolRuntime

__all__ = [
    "AgentConfig",
    "AgentInput",
    "AgentLoop",
    "AgentResult",
    "AgentWorkflow",
    "ApprovalDecision",
    "ApprovalPolicy",
    "AuthorizationCompleted",
    "AuthorizationPolicy",
    "AutoApproval",
    "BatchDecision",
    "BatchItem",
    "CarriedState",
    "CodeMode",
    "CompactionConfig",
    "Constraint",
    "ContextView",
    "CriteriaSet",
    "Evaluation",
    "EvaluationRequest",
    "EventsPage",
    "ExecutionStrategy",
    "GrantRequest",
    "GrantRevocation",
    "Limits",
    "NotificationConfig",
    "PendingApproval",
    "PendingAuthorization",
    "PendingInput",
    "PolicyChange",
    "Price",
    "RunEvent",
    "RunSnapshot",
    "RunStatus",
    "SessionConfig",
    "SessionReply",
    "SessionView",
    "SlackTarget",
    "StandingGrant",
    "Steer",
    "ToolCallRecord",
    "ToolReply",
    "ToolRuntime",
    "WebhookTarget",
    "run_agent",
    "start_agent",
]
