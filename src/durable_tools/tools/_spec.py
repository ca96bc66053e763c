"""What a tool is, as data: the spec the catalog, the workflow and the UI all read.

A `ToolSpec` is plain, serialisable data. It crosses into the workflow (through the
catalog activity) and is recorded in history, so it must never hold callables or
secrets. Worker-side behaviour (the function, an approval predicate) lives on
`RegisteredTool` in the registry.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._durations import Seconds

__all__ = [
    "MAX_LABEL_CHARS",
    "ApprovalMode",
    "ExecutionPolicy",
    "LoadingMode",
    "OAuthRequirement",
    "RetrySpec",
    "Safety",
    "SideEffect",
    "ToolSpec",
    "Transport",
    "ValidateMode",
    "label_problem",
]


MAX_LABEL_CHARS = 80
"""Longest display label (`ToolSpec.label`)."""

_LABEL_PUNCTUATION = frozenset(" -_.,:;()/&'+!?#%")


def label_problem(label: str) -> str | None:
    """What is wrong with a display label, or None.

    A label is shown in a terminal, an HTML page and the Temporal UI's markdown summaries,
    and may come from an MCP server: nothing in it may be markup (`[`, `<`, a backtick),
    a control, bidirectional or invisible character, or white space other than a space.
    """
    if label != label.strip() or "  " in label:
        return "no leading, trailing or doubled spaces"
    bad = sorted({c for c in label if not (c.isalnum() or c in _LABEL_PUNCTUATION)})
    if bad:
        return "only letters, digits, spaces and -_.,:;()/&'+!?#% (not " + repr("".join(bad)) + ")"
    return None


class LoadingMode(StrEnum):
    """Whether a tool is advertised to the model from the start or found by search."""

    ALWAYS = "always"
    DEFERRED = "deferred"


SideEffect = Literal["none", "internal", "external", "irreversible"]
"""How far a tool's effects reach: nothing, this system only, other systems, or for good."""

ApprovalMode = Literal["never", "always", "conditional"]
"""`conditional` means a worker-side predicate over the arguments decides, per call."""

ValidateMode = Literal["input", "output", "both", "none"]
"""What is checked against the tool's schemas: its arguments, its result, both or neither."""

Transport = Literal["function", "mcp", "http", "sub-agent", "a2a", "callback", "flow"]
"""How a call reaches the tool: a Python function on the worker, an MCP server, an HTTP
API (OpenAPI or hand-declared), a child agent run, a remote A2A agent, a client attached
to the run (a callback tool), or a flow (a graph of other tools run as a child
workflow)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Safety(_Frozen):
    """Truthful metadata about what a tool may do. Defaults assume the worst."""

    read_only: bool = False
    """The tool changes nothing anywhere. Read-only tools are idempotent by nature."""
    idempotent: bool = False
    """Running the tool twice with the same idempotency key has the effect of running it once."""
    networked: bool = False
    """The tool talks to other hosts."""
    filesystem: bool = False
    """The tool reads or writes files."""
    shell: bool = False
    """The tool runs shell commands."""
    spends_money: bool = False
    """The tool can cost money (payments, paid APIs)."""
    requires_confirmation: bool = False
    """A person should confirm each call; a run-level policy may turn this into approval."""
    workspace_root: str | None = None
    """Where a filesystem tool is confined, if anywhere."""
    redact: tuple[str, ...] = ()
    """Argument names whose values are replaced by `[redacted]` in summaries, logs and approvals."""
    side_effect: SideEffect = "external"
    """How far the tool's effects reach."""

    @property
    def mutating(self) -> bool:
        """True unless the tool is read-only."""
        return not self.read_only

    @property
    def safe_to_repeat(self) -> bool:
        """True when a repeated call after an unknown outcome (a timeout) is harmless."""
        return self.read_only or self.idempotent


class RetrySpec(_Frozen):
    """Exponential retry, in seconds. Mirrors Temporal's retry policy."""

    initial_interval: Seconds = 1.0
    """Delay before the first retry."""
    backoff_coefficient: float = Field(default=2.0, ge=1.0, le=1_000, allow_inf_nan=False)
    """Each delay is the previous one times this."""
    maximum_interval: Seconds | None = 60.0
    """Delays never exceed this."""
    maximum_attempts: int = Field(default=5, ge=0)
    """Attempts in all, the first included; 0 means no limit (bounded by the timeouts)."""
    non_retryable_errors: tuple[str, ...] = ()
    """Error type names (exception class names, or `ErrorKind` values) that never retry."""
    retry_on: tuple[str, ...] | None = None
    """An allow-list: only errors of these type names (exception class names, base classes
    included, or `ErrorKind` values) are retried, every other error goes to the model at
    once. None retries every retryable error. Exclusive with `non_retryable_errors`.
    Timeouts follow `retry_timeouts`."""
    retry_timeouts: bool | None = None
    """Whether a timed-out attempt is retried. None: only if the tool is safe to repeat."""

    @model_validator(mode="after")
    def _one_list(self) -> RetrySpec:
        if self.retry_on is not None and self.non_retryable_errors:
            raise ValueError(
                "retry_on and non_retryable_errors are exclusive: give the errors to retry "
                "(retry_on) or the errors not to retry (non_retryable_errors), not both"
            )
        return self


class ExecutionPolicy(_Frozen):
    """How the engine runs one call of the tool. All durations are in seconds."""

    start_to_close_timeout: Seconds = 60.0
    """Longest a single attempt may run. For a sub-agent, see `schedule_to_close_timeout`."""
    schedule_to_close_timeout: Seconds | None = None
    """Longest the call may take over all its attempts, None for no overall bound. For a
    sub-agent: the child run's execution timeout (registration puts the tighter of the two
    timeouts given here); a flow's bound is its own `timeout=`."""
    heartbeat_timeout: Seconds | None = None
    """An attempt that does not heartbeat this often is considered lost."""
    retry: RetrySpec = RetrySpec()
    """Retry policy for retryable errors."""
    task_queue: str | None = Field(default=None, min_length=1, max_length=1_000)
    """Run the tool on workers of this task queue instead of the run's own. For a
    sub-agent: the child run's task queue (its workers must run the agent workflow and
    the child's tools)."""
    local: bool | None = None
    """Run as a local activity: cheaper and faster, for short tools on the same worker.
    None (the default) lets the registry choose: local only for a read-only, short, plain
    Python tool (see `tools/_auto_local.py`); registration makes it True or False, so a
    run's recorded catalog says how each tool runs. A spec still None runs regular."""
    max_concurrent: int | None = Field(default=None, ge=1)
    """Most calls of the tool running at once on one worker process (all runs together).
    The tool gets its own task queue and worker slots; with several worker processes the
    cap is this times the number of processes."""
    rate_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Most calls of the tool started per second across the deployment, enforced by the
    Temporal server on the tool's own task queue (calls over it wait, they do not fail)."""
    max_calls_per_run: int | None = Field(default=None, ge=1)
    """Most calls of the tool one run may make (continue-as-new included); calls over the
    budget never run and the model is told the budget is used up."""

    @property
    def limited(self) -> bool:
        """True when the tool runs on its own task queue for `max_concurrent`/`rate_limit`."""
        return self.max_concurrent is not None or self.rate_limit is not None

    @model_validator(mode="after")
    def _limits_need_a_queue(self) -> ExecutionPolicy:
        # A local activity runs inside the workflow's worker, with no task queue of its own:
        # a cap or rate limit could not be enforced, and a silently ignored limit is worse
        # than an error at registration.
        if self.local and self.limited:
            raise ValueError(
                "max_concurrent and rate_limit need a regular activity: drop local=True"
            )
        return self


class OAuthRequirement(_Frozen):
    """The tool needs an OAuth grant of the run's user for this provider and these scopes."""

    provider: str
    scopes: tuple[str, ...] = ()


class ToolSpec(_Frozen):
    """Everything the catalog, the workflow and operators know about a tool."""

    name: str
    """ASCII snake_case, 1..64 characters; also the activity type name."""
    description: str = ""
    """What the model reads to decide when to call the tool."""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """Model-visible JSON Schema (Draft 2020-12) of the arguments, without injected ones."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema of the structured result, if the tool declares one."""
    examples: tuple[dict[str, Any], ...] = ()
    """Example argument objects, validated against `input_schema` at registration."""
    tags: tuple[str, ...] = ()
    """Free-form labels for filtering and search."""
    auth_scopes: tuple[str, ...] = ()
    """Scopes a run must be granted to see the tool at all."""
    loading: LoadingMode = LoadingMode.ALWAYS
    """Advertised from the start, or discovered through tool search."""
    safety: Safety = Safety()
    """What the tool may do."""
    policy: ExecutionPolicy = ExecutionPolicy()
    """How the engine runs it."""
    approval: ApprovalMode = "never"
    """Whether a person must approve each call before it runs."""
    oauth: OAuthRequirement | None = None
    """An OAuth grant the tool needs, resolved on the worker."""
    aliases: dict[str, str] = Field(default_factory=dict)
    """Provider-specific names, e.g. {"anthropic": "getWeather"}: a model of that provider
    calling the alias runs this tool (the workflow resolves it; see
    `tools._names.alias_provider` for the key of a model spec). Later stages see `name`."""
    strict: bool = False
    """Ask providers for strict schema adherence (OpenAI strict function calling)."""
    subagent: dict[str, Any] | None = None
    """For a sub-agent tool: the child agent's configuration (an `AgentConfig` as JSON).
    Such a tool runs as a child workflow, not as an activity."""
    flow: dict[str, Any] | None = None
    """For a flow tool: its validated plan (a `durable_tools.flows.FlowPlan` as JSON).
    Such a tool runs as a child workflow whose nodes are tool activities."""
    validation: ValidateMode = "both"
    """What is checked: `input` (arguments, in the workflow and again on the worker),
    `output` (the structured result against `output_schema`, once the tool has run),
    `both` (the default; output is checked only when there is an output schema) or `none`
    (a schema tool then gets the arguments as the model wrote them, parsed but unchecked)."""
    cost_hint: str | None = None
    """Catalog metadata: what a call costs, in the tool author's words ("free", "$0.01").
    Like every catalog metadata field, for operators only: never sent to the model (what
    the model must know belongs in `description`); shown by `durable-tools tools`."""
    latency_hint: str | None = None
    """Catalog metadata: how long a call usually takes ("~200 ms", "minutes"). Operators
    only, never sent to the model."""
    safety_notes: str | None = None
    """What a person, and the model, should know before the tool is used ("deletes for
    good; confirm the account id with the user first"): shown by `durable-tools tools` and
    the inbox's approval page, and added to the description the model reads (see
    `tools._model_description`), where it can change what the model does."""
    label: str | None = Field(default=None, min_length=1, max_length=MAX_LABEL_CHARS)
    """A display label apart from the snake_case name ("Refund an order"): the inbox, the
    CLI and the Temporal UI's summaries show it; the model, activity types and policies
    use `name`. Letters, digits, spaces and `-_.,:;()/&'+!?#%` only (see `label_problem`)."""
    source: str | None = None
    """Catalog metadata: where the tool comes from (a module, an MCP server, an API)."""
    transport: Transport = "function"
    """Catalog metadata: how a call reaches the tool."""
    mime_types: tuple[str, ...] = ()
    """Catalog metadata: MIME types the tool reads or produces ("application/pdf")."""
    approval_summary: str | None = Field(default=None, max_length=500)
    """A template of the arguments that says in a line what a call does, for the person
    asked to approve it: `"Refund {amount_cents:money} on order {order_id}"`. Rendered in
    the workflow when the call starts waiting (see `tools._approval_summary`)."""
    approval_summary_on_worker: bool = False
    """A function on the worker writes the summary instead (the preflight activity runs
    it, since workflow code must not run the tool author's code)."""
    callback: bool = False
    """A callback tool: no worker body. The run publishes the call and waits (up to
    `policy.start_to_close_timeout`) for a client attached to it to run the tool and send
    the result back (`AgentRun.serve_callbacks`); see `workflows/gates/_callback_gate.py`."""

    @model_validator(mode="after")
    def _plain_label(self) -> ToolSpec:
        problem = label_problem(self.label) if self.label is not None else None
        if problem:
            raise ValueError(f"label {self.label!r}: {problem}")
        return self

    @property
    def display_name(self) -> str:
        """What people read for the tool: its `label`, else its `name`."""
        return self.label or self.name

    @property
    def validates_input(self) -> bool:
        """Whether arguments are checked against `input_schema`."""
        return self.validation in ("input", "both")

    @property
    def validates_output(self) -> bool:
        """Whether a structured result is checked against `output_schema`."""
        return self.validation in ("output", "both")
