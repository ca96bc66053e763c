"""The client side: starting runs, approving, steering and reading them (the API behind the CLI).

Its public names are exported by the top-level package (`from durable_tools import
DurableTools, AgentRun, DecisionError`) and documented there; this package lists none of
its own and keeps them importable here for code written before they moved.

`DurableTools` starts and lists runs; `AgentRun` is the handle on one; `answer_input`
answers the question a run's MCP tool asks its user. `AgentRun.decide_request` decides a
request a person was shown: the one decide path of the command line, the inbox and any
front end of yours. When nothing was recorded it raises a `DecisionError` whose subclass
says why (`AlreadyDecided`, `StaleRequest`, `NotADecider`, `WorkerUnavailable`, ...).

The code, by role: `_durable_tools` (the entry point), `start/` (what a start sends, and
schedules), `runs/` (`AgentRun` and what it calls: the decide operation and its errors,
progress, watching a run), `sessions/` (a session's messages), `callbacks/` (callback tools
served here), `inputs/` (answering a tool's question), `render/` (what the CLI prints).
"""

from durable_tools.client._durable_tools import (
    DurableTools as DurableTools,
    RunSummary as RunSummary,
)
from durable_tools.client.inputs._answer import (
    InputAnswerRejected as InputAnswerRejected,
    answer_input as answer_input,
)
from durable_tools.client.runs._agent_run import (
    AgentRun as AgentRun,
    PendingRequest as PendingRequest,
)
from durable_tools.client.runs._decide import (
    AlreadyDecided as AlreadyDecided,
    AmbiguousRequest as AmbiguousRequest,
    DecisionError as DecisionError,
    DecisionRecorded as DecisionRecorded,
    DecisionTimedOut as DecisionTimedOut,
    MalformedDecision as MalformedDecision,
    NotADecider as NotADecider,
    NothingPending as NothingPending,
    RejectedByRun as RejectedByRun,
    RunEnded as RunEnded,
    RunNotFound as RunNotFound,
    RunUnreadable as RunUnreadable,
    StaleRequest as StaleRequest,
    WorkerUnavailable as WorkerUnavailable,
)
from durable_tools.client.runs._progress import (
    ToolProgress as ToolProgress,
    progress_in as progress_in,
)
from durable_tools.client.sessions._messages import (
    SentMessage as SentMessage,
    SessionRefused as SessionRefused,
)
from durable_tools.client.start._schedules import ScheduleSummary as ScheduleSummary

__all__: list[str] = []
