"""Starting runs, approving, steering and reading them: the Python API behind the CLI.

`DurableTools` starts and lists runs; `AgentRun` is the handle on one;
`answer_input` answers the question a run's MCP tool asks its user.

`AgentRun.decide_request` decides a request a person was shown: the one decide path of
the command line, the inbox and any front end of yours. When nothing was recorded it raises
a `DecisionError` whose subclass says why (`AlreadyDecided`, `StaleRequest`,
`NotADecider`, `WorkerUnavailable`, ...).

The code, by role: `_durable_tools` (the entry point), `start/` (what a start sends, and
schedules), `runs/` (`AgentRun` and what it calls: the decide operation and its errors,
progress, watching a run), `sessions/` (a session's messages), `callbacks/` (callback tools
served here), `inputs/` (answering a tool's question), `render/` (what the CLI prints).
"""

from durable_tools.client._durable_tools import DurableTools, RunSummary
from durable_tools.client.inputs._answer import InputAnswerRejected, answer_input
from durable_tools.client.runs._agent_run import AgentRun, PendingRequest
from durable_tools.client.runs._decide import (
    AlreadyDecided,
    AmbiguousRequest,
    DecisionError,
    DecisionRecorded,
    DecisionTimedOut,
    MalformedDecision,
    NotADecider,
    NothingPending,
    RejectedByRun,
    RunEnded,
    RunNotFound,
    RunUnreadable,
    StaleRequest,
    WorkerUnavailable,
)
from durable_tools.client.runs._progress import ToolProgress, progress_in
from durable_tools.client.sessions._messages import SentMessage, SessionRefused
from durable_tools.client.start._schedules import ScheduleSummary

__all__ = [
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
]
