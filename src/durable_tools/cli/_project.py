"""`--project FILE`: the project file (`worker._project`) a command reads its defaults from."""

from __future__ import annotations

import argparse
import os

from durable_tools.tools import ToolRegistry
from durable_tools.worker._project import PROJECT_ENV, Project, ProjectError, load_project

from ._errors import CliError

__all__ = ["add_project_flag", "project_defaults", "project_from_args", "project_registry"]


def add_project_flag(p: argparse._ActionsContainer) -> None:
    """The `--project FILE` flag (default `DURABLE_TOOLS_PROJECT`)."""
    p.add_argument(
        "--project",
        metavar="FILE",
        help=f"the project file (TOML: sources, policy, limits; docs/project.md; default "
        f"{PROJECT_ENV}); flags win over it",
    )


def project_from_args(args: argparse.Namespace) -> Project | None:
    """The project `--project` (or `DURABLE_TOOLS_PROJECT`) names, read and checked; None
    when neither names one. Read once per command: kept on `args`.

    Raises:
        CliError: the file cannot be read or breaks the schema (naming the key).
    """
    cached = getattr(args, "project_file", None)
    if isinstance(cached, Project):
        return cached
    path = getattr(args, "project", None) or os.environ.get(PROJECT_ENV)
    if not path:
        return None
    try:
        project = load_project(path)
    except ProjectError as error:
        raise CliError(f"invalid project file: {error}") from None
    args.project_file, args.project_file_path = project, path
    return project


def project_defaults(args: argparse.Namespace) -> None:
    """Fill the flags of `run` the user did not give from the project file's `task_queue`
    and `run` table (its `policy` and `limits` are read by `agent_config`).

    Raises:
        CliError: the file is invalid, or neither `--model` nor `run.model` names a model.
    """
    project = project_from_args(args)
    if project is not None:
        args.task_queue = args.task_queue or project.task_queue
        args.model = args.model or project.run.model
        args.instructions = args.instructions or project.run.instructions
        args.name = args.name or project.run.name  # None: the flag was not given
    if not args.model:
        raise CliError("no model: give --model SPEC (or `model` in the project file's [run])")


async def project_registry(
    project: Project, registry: ToolRegistry | None, secrets: dict[str, str]
) -> ToolRegistry:
    """The project's tools over `registry`, a source that cannot be read as a user error."""
    try:
        return await project.registry(registry, secrets=secrets)
    except Exception as error:  # a source down, a document broken: name it, no traceback
        raise CliError(f"project file: {type(error).__name__}: {error}") from None
