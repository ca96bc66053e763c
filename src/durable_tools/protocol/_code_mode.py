"""Code mode's configuration: the opt-in `run_script` tool and the bounds on one script."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SCRIPT_TOOL", "CodeMode"]

SCRIPT_TOOL = "run_script"
"""The name of code mode's tool: its one argument is a Python script over the run's tools."""


class CodeMode(BaseModel):
    """Code mode (`AgentConfig.code_mode`): the model may write one script over its tools.

    Every bound here is enforced where the script runs (the sandbox) or in the workflow;
    hitting one stops the script and the model reads which bound it was (docs/code-mode.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_script_chars: int = Field(default=20_000, ge=100, le=200_000)
    """Longest script accepted; a longer one gets a repair message."""
    max_host_calls: int = Field(default=100, ge=1, le=1_000)
    """Tool calls (and sleeps) one script may make. The script's calls count towards
    `Limits.max_tool_calls` too; a run continues-as-new only between turns, so this bound
    is also what keeps one script's history bounded."""
    max_concurrent_host_calls: int = Field(default=16, ge=1, le=64)
    """Host calls one script may have running at once (`asyncio.gather` of more waits)."""
    max_step_seconds: float = Field(default=2.0, gt=0, le=60, allow_inf_nan=False)
    """Execution time of the script between two host calls (the sandbox's clock runs only
    while the script computes): a script that loops for ever is stopped here."""
    max_script_seconds: float = Field(default=10.0, gt=0, le=600, allow_inf_nan=False)
    """Execution time of the whole script, all steps together (waits for host calls and
    sleeps do not count): the bound for a script that computes a little between many
    cheap clock reads, which restart the per-step clock."""
    max_memory_bytes: int = Field(default=64_000_000, ge=1_000_000, le=1_000_000_000)
    """Heap the script may allocate; past it the script is stopped with `MemoryError`."""
    max_sleep_seconds: float = Field(default=300.0, ge=0, le=86_400, allow_inf_nan=False)
    """Longest single `sleep` (a durable workflow timer); longer ones are shortened to it."""
    max_output_chars: int = Field(default=16_000, ge=256, le=200_000)
    """Printed output and final value kept for the model's reply; the rest is cut."""
