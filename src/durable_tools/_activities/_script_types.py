"""What crosses between the workflow and the script-stepping activity (code mode).

Workflow-safe: no sandbox import. The script's interpreter state never crosses: the
activity keeps it in the artifact store and hands back a reference, so what history
records of a step is its host calls, what the script printed and a digest.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from durable_tools._wire import WireModel
from durable_tools.tools._results import ArtifactRef

__all__ = [
    "PRINTED_TOO_MUCH",
    "SCRIPT_STATE_MISSING",
    "SCRIPT_STEP_ACTIVITY",
    "SLEEP",
    "HostAnswer",
    "HostCall",
    "ScriptLimits",
    "ScriptProgress",
    "ScriptStep",
    "output_cap_bytes",
    "printed_too_much",
]

SCRIPT_STEP_ACTIVITY = "durable_tools.script_step"
"""Runs a script to its next host calls (or its end) in the sandbox."""

SCRIPT_STATE_MISSING = "ScriptStateMissing"
"""Error type of the step activity when the script's stored state cannot be read."""

SLEEP = "sleep"
"""The host call a script's `asyncio.sleep`/`time.sleep` becomes (a workflow timer)."""


class ScriptLimits(WireModel):
    """The sandbox's bounds for every step of one script (from `CodeMode`)."""

    max_step_seconds: float
    max_script_seconds: float
    max_memory_bytes: int
    max_host_calls: int
    max_output_chars: int


PRINTED_TOO_MUCH = "OutputLimitExceeded"
"""How the error of a script stopped for printing too much in one step begins."""


def output_cap_bytes(limits: ScriptLimits) -> int:
    """Most bytes a script may print in one step (4 per character of `max_output_chars`:
    what is shown is cut to `max_output_chars` anyway). Never equal to `max_memory_bytes`,
    so that the sandbox's `memory limit exceeded: N bytes > CAP bytes` names which of the
    two bounds it hit."""
    cap = limits.max_output_chars * 4
    return cap + 1 if cap == limits.max_memory_bytes else cap


def printed_too_much(limits: ScriptLimits) -> str:
    """The error of a script the sandbox stopped at `output_cap_bytes` (it reports that as
    a `MemoryError`, although `max_memory_bytes` does not count printed text)."""
    return (
        f"{PRINTED_TOO_MUCH}: the script printed more than {output_cap_bytes(limits):,} bytes "
        f"in one step (4 x max_output_chars, {limits.max_output_chars:,}); print less, or "
        "return the value instead"
    )


class HostAnswer(WireModel):
    """What one host call gave the script: a value, or an exception to raise there."""

    call_id: int
    value: Any = None
    """JSON-native: the tool's structured value, or its text."""
    error_type: str | None = None
    """A Python exception name the script can catch (`PermissionError`, ...)."""
    error: str | None = None
    """The exception's message: what the model would have read for a direct call."""


class ScriptStep(WireModel):
    """Input of one step: the script (first step) or its stored state and the answers."""

    now: datetime
    """The workflow's clock at this step: what `datetime.now()`/`time.time()` return."""
    limits: ScriptLimits
    script: str | None = None
    stubs: str | None = None
    """Type stubs of the host functions; the script is checked against them first."""
    seed: int = 0
    """Seed of the script's `random` (first step; later steps restore the generator)."""
    state: ArtifactRef | None = None
    """The suspended interpreter, from the previous step."""
    answers: list[HostAnswer] = Field(default_factory=list)
    calls_left: int = 0
    """Host calls the script may still make; past it a call raises `RuntimeError`."""


class HostCall(WireModel):
    """A call the script made to a host function (a tool, or `sleep`)."""

    call_id: int
    """The sandbox's number for the call (the answer names it)."""
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    problem: str | None = None
    """Why the call cannot be made as written (positional or non-JSON arguments): the
    workflow answers it with a `TypeError` carrying this text."""
    blocking: bool = False
    """A synchronous call (`time.sleep`): the script waits for its answer alone."""


class ScriptProgress(WireModel):
    """Output of one step: the script is waiting for host calls, or it ended."""

    status: Literal["waiting", "done", "invalid", "failed"]
    """`invalid`: it did not type-check or parse (nothing ran); `failed`: it raised or
    hit a bound."""
    calls: list[HostCall] = Field(default_factory=list)
    """Host calls the script made in this step, in order."""
    awaiting: list[int] = Field(default_factory=list)
    """Calls the script is blocked on (it goes on once any of them is answered)."""
    state: ArtifactRef | None = None
    output: str = ""
    """What the script printed in this step (bounded)."""
    result: str | None = None
    """The value of the script's last expression (`done`) as JSON text, or its repr;
    bounded like `output`."""
    error: str | None = None
    """Type errors, syntax error or traceback (`invalid`, `failed`)."""
