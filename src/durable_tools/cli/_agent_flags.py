"""The flags that shape an agent run, shared by `run`, `send` (which may start a session)
and `schedule create`: one definition of each."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from durable_tools._durations import MAX_DURATION_SECONDS
from durable_tools.workflows import CodeMode, CompactionConfig

from ._policy_flags import add_run_policy_flags

__all__ = [
    "MAX_SETTINGS_CHARS",
    "add_agent_flags",
    "add_idle_timeout_flag",
    "given_agent_flags",
    "idle_seconds",
    "positive",
    "settings_of",
    "validation_problems",
]

_Settings = TypeVar("_Settings", bound=BaseModel)

MAX_SETTINGS_CHARS = 2_000
"""Longest `KEY=VALUE,...` a settings flag takes (every field of a setting fits many times)."""


_COUNT = re.compile(r"[0-9]{1,18}", re.ASCII)
_SECONDS = re.compile(r"[0-9]{1,18}(\.[0-9]{1,18})?", re.ASCII)


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1, in ASCII digits (Python's `int()` also
    reads other scripts' digits, `1_000`, and fails past 4,300 digits on its own line)."""
    if not _COUNT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text[:60]!a} is not a whole number like 8")
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def idle_seconds(text: str) -> float:
    """An argparse type: a session's idle timeout, positive, finite, at most ten years,
    in ASCII digits (like 600 or 0.5)."""
    if not _SECONDS.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text[:60]!a} is not a number of seconds like 600 or 0.5"
        )
    value = float(text)
    if not math.isfinite(value) or not 0 < value <= MAX_DURATION_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {MAX_DURATION_SECONDS} seconds (ten years)"
        )
    return value


def validation_problems(error: ValidationError) -> str:
    """A validation error as one line: each field's problem, with the text given (cut)."""
    return "; ".join(
        (f"{'.'.join(map(str, e['loc']))}: " if e["loc"] else "")
        + e["msg"].removeprefix("Value error, ")
        + (f" (got {e['input'][:60]!a})" if isinstance(e.get("input"), str) else "")
        for e in error.errors()
    )


def settings_of(model: type[_Settings]) -> Callable[[str], _Settings]:
    """An argparse type reading `KEY=VALUE[,KEY=VALUE...]` into `model`; "" is its defaults.

    Keys are the model's field names; each value is validated by the model as the Python
    API validates it (ranges, finite numbers), so the command line takes exactly what
    `AgentConfig` takes. An unknown or repeated key, an item without `=`, or a value the
    model refuses is an error naming the key and the accepted keys.
    """
    keys = ", ".join(model.model_fields)

    def parse(text: str) -> _Settings:
        if len(text) > MAX_SETTINGS_CHARS:
            raise argparse.ArgumentTypeError(
                f"settings too long ({len(text)} characters, at most {MAX_SETTINGS_CHARS})"
            )
        values: dict[str, str] = {}
        for item in text.split(",") if text.strip() else ():
            key, equals, value = item.partition("=")
            key = key.strip()
            if not equals or not key:
                raise argparse.ArgumentTypeError(
                    f"{item[:60]!a} is not KEY=VALUE (settings are KEY=VALUE[,KEY=VALUE...], "
                    f"keys: {keys}; a prompt goes before this flag, or after `--`)"
                )
            if key not in model.model_fields:
                raise argparse.ArgumentTypeError(f"unknown setting {key[:60]!a} (keys: {keys})")
            if key in values:
                raise argparse.ArgumentTypeError(f"{key} is given twice")
            values[key] = value.strip()
        try:
            return model.model_validate(values)
        except ValidationError as error:
            raise argparse.ArgumentTypeError(validation_problems(error)) from None

    parse.__name__ = f"{model.__name__} settings"  # argparse names the type in its errors
    return parse


def add_agent_flags(
    p: argparse._ActionsContainer,
    *,
    runs: str = "run",
    model_required: bool = True,
    project: bool = False,
) -> None:
    """The model, tools, identity, strategy, limits, code mode, compaction, versioning and
    approval policy of a run.

    Args:
        p: The command's parser.
        runs: How the help names what the flags shape ("run", or "runs" for a schedule).
        model_required: False for `send`, where `--model` (and with it the other flags)
            only serves to start a session that does not run yet.
        project: The command takes `--project`, whose `run.model` may stand for `--model`.
    """
    if project:
        tail = " (default: the project file's run.model)"
    else:
        tail = "" if model_required else "; with it, a session that does not run yet is started"
    p.add_argument(
        "--model",
        required=model_required and not project,
        help="e.g. scripted:steps.json or openai:gpt-4o-mini" + tail,
    )
    p.add_argument(
        "--fallback-model",
        action="append",
        default=[],
        metavar="SPEC",
        help="a model tried when the ones before it are overloaded or down (repeatable, in "
        "order; docs/models.md)",
    )
    p.add_argument("--tools", metavar="MODULE[:ATTR]", help="offer only this registry's tools")
    p.add_argument(
        "--name", metavar="AGENT", help="agent name (default the project's run.name, else agent)"
    )
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
    _add_settings_flag(
        p,
        "--code-mode",
        CodeMode,
        "offer the model run_script, a Python script over the tools (docs/code-mode.md; "
        "needs the `code` extra on the workers); optional bounds, e.g. max_host_calls=50",
    )
    _add_settings_flag(
        p,
        "--compaction",
        CompactionConfig,
        "summarise older messages before the model's context fills up (docs/compaction.md; "
        "a model whose window is not known needs window_tokens); optional settings, e.g. "
        "window_tokens=32000,keep_last=10",
    )
    add_run_policy_flags(p)


def _add_settings_flag(
    p: argparse._ActionsContainer, flag: str, model: type[BaseModel], what: str
) -> None:
    """`flag [KEY=VALUE,...]`: alone, `model`'s defaults; with settings, those fields."""
    p.add_argument(
        flag,
        nargs="?",
        const=model(),
        type=settings_of(model),
        metavar="KEY=VALUE,...",
        help=f"{what} (keys: {', '.join(model.model_fields)})",
    )


def add_idle_timeout_flag(p: argparse._ActionsContainer) -> None:
    """`--idle-timeout SECONDS`: how long a session this command starts waits for a message."""
    p.add_argument(
        "--idle-timeout",
        type=idle_seconds,
        metavar="SECONDS",
        help="how long the session waits for the next message before it ends (default a "
        "week, at most ten years)",
    )


def given_agent_flags(args: argparse.Namespace) -> list[str]:
    """The agent flags besides `--model` that `args` holds other than their defaults.

    `send` refuses them without `--model`: they shape a session when it starts, and
    without `--model` it starts none (so they would be silently ignored).
    """
    defaults = argparse.ArgumentParser(add_help=False)
    add_agent_flags(defaults, model_required=False)
    return [
        action.option_strings[0]
        for action in defaults._actions
        if action.dest != "model" and getattr(args, action.dest, action.default) != action.default
    ]
