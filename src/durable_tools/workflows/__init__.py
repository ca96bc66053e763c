"""The agent workflow and the data it takes, keeps and returns."""

from ._agent import AgentWorkflow
from ._types import (
    AgentConfig,
    AgentInput,
    AgentResult,
    ApprovalDecision,
    ApprovalPolicy,
    AuthorizationCompleted,
    CarriedState,
    EventsPage,
    ExecutionStrategy,
    Limits,
    PendingApproval,
    PendingAuthorization,
    RunEvent,
    RunSnapshot,
    RunStatus,
    ToolCallRecord,
)

__all__ = [
    "AgentConfig",
    "AgentInput",
    "AgentResult",
    "AgentWorkflow",
    "ApprovalDecision",
    "ApprovalPolicy",
    "AuthorizationCompleted",
    "CarriedState",
    "EventsPage",
    "ExecutionStrategy",
    "Limits",
    "PendingApproval",
    "PendingAuthorization",
    "RunEvent",
    "RunSnapshot",
    "RunStatus",
    "ToolCallRecord",
]
