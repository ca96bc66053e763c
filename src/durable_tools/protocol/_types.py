"""An agent run's configuration, records and decisions, as data that crosses the wire.

The run's own input, result and views are in `_run_io`."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from durable_tools._durations import Seconds
from durable_tools._wire import WireModel
from durable_tools.messages import ModelSettings, OutputSchema, Usage
from durable_tools.models._windows import context_window
from durable_tools.protocol._client_tools import MAX_CLIENT_TOOLS, ClientTool, client_tool_key
from durable_tools.protocol._code_mode import CodeMode
from durable_tools.protocol._compaction import CompactionConfig
from durable_tools.protocol._limits import (
    MAX_STEER_CHARS,
)
from durable_tools.protocol._models import MAX_FALLBACK_MODELS, check_fallbacks, split_model_list
from durable_tools.protocol._notification_types import (
    NotificationConfig,
    NotificationEvent,
    SlackTarget,
    WebhookTarget,
)
from durable_tools.protocol._policy_types import (
    ApprovalPolicy,
    PolicyChange,
)
from durable_tools.protocol._session_types import SessionConfig
from durable_tools.search_attributes import AGENT_STATUS
from durable_tools.tools._spec import Transport

__all__ = [
    "WAITING_STATUSES",
    "AgentConfig",
    "ApprovalPolicy",
    "AuthorizationPolicy",
    "CompactionConfig",
    "ExecutionStrategy",
    "Limits",
    "ModelSettings",
    "NotificationConfig",
    "NotificationEvent",
    "PolicyChange",
    "Price",
    "RunStatus",
    "SessionConfig",
    "SlackTarget",
    "Steer",
    "Transport",
    "WebhookTarget",
    "status_in",
]

"""How a tool call reached its tool: a Python function, an MCP server, an HTTP API, or a
sub-agent run."""


class RunStatus(StrEnum):
    """Where a run is. The value is what the `AgentStatus` search attribute holds."""

    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_AUTHORIZATION = "awaiting_authorization"
    AWAITING_INPUT = "awaiting_input"
    """A tool call waits for the user to answer its MCP server's question."""
    AWAITING_CALLBACK = "awaiting_callback"
    """A callback tool's call waits for a client to run it."""
    AWAITING_MESSAGE = "awaiting_message"
    """A session answered and waits for the user's next message (docs/sessions.md)."""
    COMPLETED = "completed"
    LIMIT_REACHED = "limit_reached"
    FAILED = "failed"
    CANCELLED = "cancelled"


WAITING_STATUSES = (
    RunStatus.AWAITING_APPROVAL,
    RunStatus.AWAITING_AUTHORIZATION,
    RunStatus.AWAITING_INPUT,
    RunStatus.AWAITING_CALLBACK,
    RunStatus.AWAITING_MESSAGE,
)
"""The statuses of a run that waits on someone: a person, a callback client, a session's user."""


def status_in(statuses: tuple[RunStatus, ...]) -> str:
    """A visibility query's `AgentStatus IN (...)` clause for `statuses`."""
    values = ", ".join(f"'{status.value}'" for status in statuses)
    return f"{AGENT_STATUS.name} IN ({values})"


class ExecutionStrategy(BaseModel):
    """How the tool calls of one model turn run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["sequential", "parallel", "batched"] = "sequential"
    """sequential: one after another; parallel: at most `concurrency` at once;
    batched: groups of `batch_size`, each group in parallel, groups one after another."""
    concurrency: int = Field(default=4, ge=1)
    batch_size: int = Field(default=4, ge=1)


class Limits(BaseModel):
    """Bounds on a run. Hitting one ends the run with status `limit_reached`, except
    `max_tool_calls_per_turn`: the calls over it get a repair message (docs/limits.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: int = Field(default=20, ge=1)
    """Model calls in the whole run."""
    max_tool_calls: int = Field(default=100, ge=0)
    """Tool calls in the whole run."""
    max_tool_calls_per_turn: int = Field(default=16, ge=0)
    """Tool calls run from one model answer; each call over it is answered with an error
    naming the limit (the run ends only with `on_invalid_call="fail"`)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Input plus output tokens of all model calls of the run (continue-as-new included);
    None: no bound. Checked after each model turn that asks for tools."""
    max_cost: float | None = Field(default=None, gt=0)
    """Cost of the run's model calls, in the currency of `AgentConfig.prices`, which must
    price the agent's model; None: no bound."""


class Price(BaseModel):
    """What a model's tokens cost, per million (in any one currency)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(default=None, ge=0)
    """For input tokens read from the prompt cache; None prices them as other input."""

    def cost(self, usage: Usage) -> float:
        """The cost of `usage` (reasoning tokens are part of the output tokens)."""
        cached = usage.cache_read_tokens
        cached_price = (
            self.input_per_mtok
            if self.cached_input_per_mtok is None
            else self.cached_input_per_mtok
        )
        return (
            (usage.input_tokens - cached) * self.input_per_mtok
            + cached * cached_price
            + usage.output_tokens * self.output_per_mtok
        ) / 1_000_000


class AuthorizationPolicy(BaseModel):
    """Run-level rules for OAuth pauses: how long a call waits for a person to authorize."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: Seconds | None = None
    """How long an authorization may wait; None waits for ever (durably)."""
    on_timeout: Literal["deny", "fail", "reissue"] = "deny"
    """deny: the model is told the authorization did not happen; fail: the run ends;
    reissue: a fresh link is issued and the wait starts again (at most `max_reissues`
    times, then deny)."""
    max_reissues: int = Field(default=3, ge=0, le=100)
    """Automatic re-issues after deadlines (manual ones, `durable-tools auth reissue`, are
    not counted)."""

    @model_validator(mode="after")
    def _reissue_needs_deadline(self) -> AuthorizationPolicy:
        if self.on_timeout != "deny" and self.timeout_seconds is None:
            raise ValueError(f"on_timeout={self.on_timeout!r} needs timeout_seconds")
        return self


class AgentConfig(WireModel):
    """What an agent is: instructions, model, tools, strategy and limits."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="agent", min_length=1, max_length=200)
    """Shown as the `AgentName` search attribute."""
    model: str
    """Adapter and model, e.g. `scripted:steps.json` or `openai:gpt-4o-mini`. Given a list
    (`model=["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"]`), the first is `model` and
    the others `fallback_models`."""
    fallback_models: list[str] = Field(default_factory=list, max_length=MAX_FALLBACK_MODELS)
    """Tried in order when the model before fails with an error a retry might have fixed
    (overload, 5xx, a rate limit, a timeout) after its `model_max_attempts`; never for a
    rejected key or request, nor a context too long (docs/models.md, "Fallback models")."""
    instructions: str | None = None
    """The system message."""
    tools: list[str] | None = None
    """Names of the tools to offer; None offers every tool visible to the run."""
    strategy: ExecutionStrategy = ExecutionStrategy()
    limits: Limits = Limits()
    approval: ApprovalPolicy = ApprovalPolicy()
    continue_as_new_after_events: int | None = Field(default=None, ge=20)
    """Continue-as-new after this many history events, besides when the server suggests it."""
    versioning: Literal["pinned", "upgrade_on_continue", "auto_upgrade"] = "pinned"
    """How the run follows new worker builds under Worker Deployment Versioning (ignored by
    unversioned workers; docs/operations.md): `pinned` finishes on the build it started on,
    its continued-as-new runs too; `upgrade_on_continue` keeps each run on its build and
    continues as new onto the current build once one is set (at the next turn's end);
    `auto_upgrade` moves at its next workflow task (workflow changes need `patched`); its
    continued-as-new runs behave as `upgrade_on_continue` (Temporal gives the start's
    auto-upgrade override to the first run only)."""
    authorization: AuthorizationPolicy = AuthorizationPolicy()
    """How OAuth pauses end: deadline and what passing it does."""
    notifications: NotificationConfig | None = None
    """Webhooks and Slack messages about approvals, authorizations, questions for the user
    and callback calls; None sends none."""
    input_timeout_seconds: float = Field(
        default=86_400.0, gt=0, le=30 * 86_400.0, allow_inf_nan=False
    )
    """How long a tool call waits for the user to answer its MCP server's question when
    the tool has no `schedule_to_close_timeout` (which bounds it otherwise); then the model
    reads a timeout error. One day by default, at most 30 days."""
    output_limit_bytes: int = Field(default=16_000, ge=256)
    """Largest tool output kept in the conversation; larger ones go to the artifact store."""
    max_advertised_tools: int = Field(default=64, ge=1, le=1_000)
    """Most catalog tools offered to the model from the start (providers cap a request's
    tools: OpenAI at 128). Beyond it, tools are deferred in catalog order and found through
    `search_tools`; the latest this many tools found are offered too."""
    tool_selector: str | None = Field(default=None, min_length=1, max_length=100)
    """The name of a tool selector registered on the worker (`build_worker(tool_selectors=
    {...})`): before each model turn it chooses which of the offered tools the model sees
    (docs/tools.md, "Choosing the tools of each turn"). None offers them all."""
    max_subagent_depth: int = Field(default=1, ge=0)
    """How deep sub-agents may nest: 1 lets this agent use sub-agents whose own sub-agent
    tools are hidden; 0 hides sub-agent tools altogether."""
    activity_summaries: bool = True
    """Give each model and tool activity a UI summary (tool, call id, abridged arguments).
    Operators want them; each costs the SDK a sandboxed payload conversion, so a
    latency-critical agent may turn them off (about 3 ms a tool call in `make bench`)."""
    summary_arguments: bool = True
    """Put a tool call's abridged arguments in its activity summary. Summaries are not
    encrypted (the server and UI read them as they are): a client with a payload codec
    starts runs with this off unless it was set explicitly."""
    model_timeout_seconds: Seconds = 300.0
    model_max_attempts: int = Field(default=5, ge=0)
    model_heartbeat_seconds: Seconds = 10.0
    cancel_grace_seconds: float = Field(default=5.0, ge=0, le=600, allow_inf_nan=False)
    """How long a cancelled call waits for its tool activity to acknowledge the cancel (a
    sync tool sees it at its next poll of `ctx.cancelled`, within a heartbeat or two)
    before the run stops waiting and records the call's outcome as unknown."""
    """The model activity heartbeats while its call is in flight; one silent this long (its
    worker or the server died) is retried instead of waiting out `model_timeout_seconds`."""
    stream_tokens: bool = False
    """Stream the model's text as it is generated to the run's companion stream workflow
    (`<run-id>/stream`), for `AgentRun.stream()` and `durable-tools watch`; the run's own
    history still keeps only final messages. See docs/streaming.md."""
    on_invalid_call: Literal["repair", "fail"] = "repair"
    """A call of an unknown tool or with invalid arguments: `repair` tells the model what was
    wrong under the same call id and goes on; `fail` ends the run FAILED, naming the call."""
    events_kept: int = Field(default=500, ge=1, le=5_000)
    """Events the run keeps for the `events` queries; older ones are dropped (and counted).
    `durable-tools events RUN --follow` receives every event as long as it keeps up."""
    model_settings: ModelSettings | None = None
    """Temperature, output length, tool choice, ... for every model call; None sends none
    (the provider's defaults). `DurableTools.start(model_settings=...)` overrides fields."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Token prices by model spec (as in `model`), for the run's cost and `max_cost`."""
    output_type: OutputSchema | None = None
    """The type of the final answer: a pydantic model (dataclass, TypedDict), a JSON schema
    dict, or an `OutputSchema`; kept as its schema. The model is given the schema, its
    answer is validated in the workflow, and `AgentResult.output` holds the value (the
    typed instance through `AgentRun.result()`). None: a free-text answer."""
    output_retries: int = Field(default=2, ge=0, le=10)
    """How often the model is asked to repair a final answer that breaks `output_type`;
    one more invalid answer ends the run `failed`, naming what was wrong."""
    session: SessionConfig | None = None
    """Make the run a session: after each answer it waits durably for the next user
    message (`AgentRun.send`) until closed or idle too long; None: the run ends at its
    answer. In a session, `max_turns`, `max_tool_calls` and `output_retries` count per
    message; token and cost budgets count the whole session. See docs/sessions.md."""
    compaction: CompactionConfig | None = None
    """Summarise older messages before the conversation outgrows the model's context
    window (docs/compaction.md); None: never (a conversation too long fails the run)."""
    code_mode: CodeMode | None = None
    """Offer the `run_script` tool: a Python script over the run's tools, each of its calls
    a gated, durable tool call (docs/code-mode.md). None: no code mode."""
    client_tools: list[ClientTool] = Field(default_factory=list, max_length=MAX_CLIENT_TOOLS)
    """Tools the run's client declares and runs itself (an AG-UI front end's): each is a
    callback tool of this run, beside the worker's tools (a name of the worker's is
    refused when the catalog loads). Empty: none."""

    @model_validator(mode="before")
    @classmethod
    def _model_list(cls, data: Any) -> Any:
        return split_model_list(data)

    @field_validator("output_type", mode="before")
    @classmethod
    def _output_schema(cls, value: Any) -> Any:
        return OutputSchema.coerce(value)

    @property
    def models(self) -> list[str]:
        """The model, then its fallbacks: the order each model turn tries them in."""
        return [self.model, *self.fallback_models]

    @field_validator("client_tools")
    @classmethod
    def _distinct_client_tools(cls, tools: list[ClientTool]) -> list[ClientTool]:
        seen: set[str] = set()
        for tool in tools:
            key = client_tool_key(tool.name)
            if key in seen:
                raise ValueError(f"two client tools are named {tool.name!r} (case aside)")
            seen.add(key)
        return tools

    @model_validator(mode="after")
    def _check_models(self) -> AgentConfig:
        check_fallbacks(self.models, self.model_max_attempts)
        unpriced = [spec for spec in self.models if spec not in self.prices]
        if self.limits.max_cost is not None and unpriced:
            raise ValueError(
                f"limits.max_cost needs a price for the model {unpriced[0]!r} in `prices`"
            )
        return self

    @model_validator(mode="after")
    def _compaction_window(self) -> AgentConfig:
        # Resolved here, once, so the window is recorded with the run's input: a later
        # change of the known windows cannot change what a running run decides.
        compaction = self.compaction
        if compaction is None or compaction.window_tokens is not None:
            return self
        windows = [(context_window(spec), spec) for spec in self.models]
        unknown = [spec for window, spec in windows if window is None]
        if unknown:
            raise ValueError(
                f"compaction needs window_tokens: the context window of the model "
                f"{unknown[0]!r} is not known"
            )
        # Any of the models may answer: the context must fit the smallest window.
        window = min(window for window, _ in windows if window is not None)
        self.compaction = compaction.model_copy(update={"window_tokens": window})
        return self


class Steer(BaseModel):
    """A steering instruction for a run, sent with the `steer_turn` signal.

    The instruction reaches the model as a user message before its next turn. With
    `skip_remaining`, the calls of the current turn that have not started yet are not run:
    each gets the result `skipped: the user steered: <instruction>`, and calls waiting for
    approval stop waiting (their approval is withdrawn). Calls already running finish.
    """

    # Strict: `"skip_remaining": "yes"` is a typo to refuse, not a truthy string to obey.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    instruction: str = Field(min_length=1, max_length=MAX_STEER_CHARS)
    skip_remaining: bool = False
    """Skip the current turn's calls that have not started (see above)."""

    @field_validator("instruction")
    @classmethod
    def _not_blank(cls, instruction: str) -> str:
        if not instruction.strip():
            raise ValueError("the instruction must be non-empty text")
        return instruction
