"""The approval flags of `run`, and reading an approval policy from a file."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from durable_tools.workflows import ApprovalPolicy

from ._errors import CliError

__all__ = ["add_run_policy_flags", "approval_policy", "load_policy_file"]


def load_policy_file(path: str) -> ApprovalPolicy:
    """An `ApprovalPolicy` from a JSON or TOML file (unknown keys are errors)."""
    try:
        text = Path(path).read_text()
        data: Any = tomllib.loads(text) if path.endswith(".toml") else json.loads(text)
        return ApprovalPolicy.model_validate(data)
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from None
    except (ValueError, tomllib.TOMLDecodeError) as error:  # ValidationError is a ValueError
        raise CliError(f"invalid approval policy in {path}: {error}") from None


def add_run_policy_flags(p: argparse._ActionsContainer) -> None:
    """The approval flags of `run`."""
    p.add_argument("--approval-policy", metavar="FILE", help="approval policy (JSON or TOML)")
    p.add_argument("--decider", action="append", default=[], metavar="WHO", help="may decide")
    p.add_argument(
        "--approval-deadline",
        type=float,
        metavar="SECONDS",
        help="how long an approval may wait (default: for ever, durably)",
    )
    p.add_argument(
        "--on-timeout",
        choices=("deny", "escalate", "fail"),
        help="what the approval deadline passing does (default deny)",
    )
    p.add_argument(
        "--on-deny",
        choices=("tell_model", "end_run"),
        help="a denial is told to the model (default) or ends the run",
    )


def approval_policy(args: argparse.Namespace) -> ApprovalPolicy:
    """The run's policy: the `--approval-policy` file's (else the project file's `[policy]`),
    with the flags on top."""
    project = getattr(args, "project_file", None)
    if args.approval_policy:
        base = load_policy_file(args.approval_policy)
    elif project is not None and project.policy is not None:
        base = project.policy
    else:
        base = ApprovalPolicy()
    changes: dict[str, Any] = {}
    if args.decider:
        changes["deciders"] = tuple(args.decider)
    if args.approval_deadline is not None:
        changes["timeout_seconds"] = args.approval_deadline
    if args.on_timeout:
        changes["on_timeout"] = args.on_timeout
    if args.on_deny:
        changes["on_deny"] = args.on_deny
    try:
        return ApprovalPolicy.model_validate({**base.model_dump(), **changes})
    except ValidationError as error:
        raise CliError(f"invalid approval policy: {error}") from None
