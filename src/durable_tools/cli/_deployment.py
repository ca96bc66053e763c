"""`worker --deployment NAME --build-id ID`: run a versioned worker (docs/operations.md)."""

from __future__ import annotations

import argparse

from temporalio.common import WorkerDeploymentVersion

from durable_tools.worker import deployment_version

from ._errors import CliError

__all__ = ["add_deployment_flags", "deployment_from_args"]


def add_deployment_flags(parser: argparse.ArgumentParser) -> None:
    """`--deployment` and `--build-id`, given together or not at all."""
    group = parser.add_argument_group(
        "Worker Deployment Versioning",
        "Run a versioned worker: runs stay on the build they started on (unless started with "
        "--versioning); make a build current with `temporal worker deployment "
        "set-current-version`.",
    )
    group.add_argument("--deployment", metavar="NAME", help="the Worker Deployment's name")
    group.add_argument("--build-id", metavar="ID", help="this build's id, e.g. a git commit")


def deployment_from_args(args: argparse.Namespace) -> WorkerDeploymentVersion | None:
    """The version the flags name, or None for an unversioned worker."""
    name, build = args.deployment, args.build_id
    if name is None and build is None:
        return None
    if name is None or build is None:
        raise CliError("--deployment and --build-id go together: give both, or neither")
    try:
        return deployment_version(name, build)
    except ValueError as error:
        raise CliError(str(error)) from None
