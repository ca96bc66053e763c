"""The flags that shape an agent run, shared by `run` and `schedule create`."""

from __future__ import annotations

import argparse

from ._policy_flags import add_run_policy_flags

__all__ = ["add_agent_flags", "positive"]


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_agent_flags(p: argparse.ArgumentParser, *, runs: str = "run") -> None:
    """The model, tools, identity, strategy, limits, versioning and approval policy of a run.

    Args:
        p: The command's parser.
        runs: How the help names what the flags shape ("run", or "runs" for a schedule).
    """
    p.add_argument("--model", required=True, help="e.g. scripted:steps.json or openai:gpt-4o-mini")
    p.add_argument(
        "--fallback-model",
        action="append",
        default=[],
        metavar="SPEC",
        help="a model tried when the ones before it are overloaded or down (repeatable, in "
        "order; docs/models.md)",
    )
    p.add_argument("--tools", metavar="MODULE[:ATTR]", help="offer only this registry's tools")
    p.add_argument("--name", default="agent", metavar="AGENT", help="agent name (default agent)")
    p.add_argument("--instructions", help="the system message")
    p.add_argument(
        "--strategy",
        choices=("sequential", "parallel", "batched"),
        default=None,
        help="how a turn's tool calls run (default sequential)",
    )
    p.add_argument(
        "--concurrency", type=positive, metavar="N", help="most tool calls at once (or per batch)"
    )
    p.add_argument(
        "--max-turns", type=positive, metavar="N", help=f"most model turns of the {runs}"
    )
    p.add_argument("--user", help=f"the user the {runs} act{'s' if runs == 'run' else ''} for")
    p.add_argument("--tenant", help=f"the tenant the {runs} act{'s' if runs == 'run' else ''} for")
    p.add_argument("--scope", action="append", default=[], metavar="S", help="granted scope")
    p.add_argument("--task-queue", help="default DURABLE_TOOLS_TASK_QUEUE or durable-tools")
    p.add_argument(
        "--versioning",
        choices=("pinned", "upgrade_on_continue", "auto_upgrade")
        if runs == "run"
        else ("pinned", "upgrade_on_continue"),
        default="pinned",
        help="how a run follows new worker builds (docs/operations.md; default pinned)",
    )
    add_run_policy_flags(p)
