"""The agent workflow: embedding its loop, the tool runtime on its own, and what policies
and evaluators exchange.

`AgentConfig` and its parts, and what a run returns and reports (`AgentResult`,
`RunStatus`, `RunEvent`, ...), are exported by the top-level `durable_tools`. This module
lists what embedding the loop in a workflow of your own takes (`AgentLoop`, `AgentInput`,
`run_agent`, `start_agent`, the `AgentWorkflow` class), the tool runtime on its own for
workflows of your own and other agent frameworks (`ToolRuntime`, `ToolReply`), and the
types of policy extensions (`Constraint`, `CriteriaSet`, `SafetyRule`, an evaluator's
`EvaluationRequest` and `Evaluation`).
"""

from durable_tools.protocol._code_mode import CodeMode as CodeMode
from durable_tools.protocol._compaction import CompactionConfig as CompactionConfig, ContextView
from durable_tools.protocol._input_types import PendingInput as PendingInput
from durable_tools.protocol._policy_types import (
    AutoApproval as AutoApproval,
    Constraint,
    CriteriaSet,
    Evaluation,
    EvaluationRequest,
    GrantRequest as GrantRequest,
    SafetyRule,
    StandingGrant as StandingGrant,
)
from durable_tools.protocol._records import RunEvent as RunEvent, ToolCallRecord as ToolCallRecord
from durable_tools.protocol._run_io import AgentInput, AgentResult as AgentResult, RunSnapshot
from durable_tools.protocol._session_types import (
    SessionConfig as SessionConfig,
    SessionReply as SessionReply,
)
from durable_tools.protocol._types import (
    AgentConfig as AgentConfig,
    ApprovalPolicy as ApprovalPolicy,
    AuthorizationPolicy as AuthorizationPolicy,
    ExecutionStrategy as ExecutionStrategy,
    Limits as Limits,
    NotificationConfig as NotificationConfig,
    Price as Price,
    RunStatus as RunStatus,
    SlackTarget as SlackTarget,
    WebhookTarget as WebhookTarget,
)
from durable_tools.protocol._wait_types import (
    ApprovalDecision,
    PendingApproval as PendingApproval,
    PendingAuthorization,
    SubagentWait,
)

from .loop._agent import AgentWorkflow
from .loop._embed import AgentLoop, run_agent, start_agent
from .loop._tool_runtime import ToolReply, ToolRuntime

__all__ = [
    "AgentInput",
    "AgentLoop",
    "AgentWorkflow",
    "ApprovalDecision",
    "Constraint",
    "ContextView",
    "CriteriaSet",
    "Evaluation",
    "EvaluationRequest",
    "PendingAuthorization",
    "RunSnapshot",
    "SafetyRule",
    "SubagentWait",
    "ToolReply",
    "ToolRuntime",
    "run_agent",
    "start_agent",
]
