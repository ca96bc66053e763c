"""Built-in workspace tools: read, write, edit, list and search files, and run commands.

Opt-in (`register_workspace_tools`), confined to one root by `Workspace`, with
truthful safety metadata and bounded outputs. File tools never follow a path outside
the root. `run_command` starts its process with the workspace as the working directory
and a minimal environment, but it is not a sandbox: that is why it asks for approval by
default.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from typing import Any

from durable_tools.tools._errors import ToolExecutionError
from durable_tools.tools._registry import RegisteredTool, ToolRegistry
from durable_tools.tools._results import ContentBlock, ToolResult

from ._command import run_supervised
from ._files import BINARY_SNIFF, is_binary, read_window, replace_at, walk_fd
from ._glob import compile_glob
from ._paths import Workspace, WorkspacePathError
from ._search import SearchLimits, search

__all__ = ["register_workspace_tools"]

_MAX_EDIT_BYTES = 16_000_000
"""edit_file holds the file in memory (old and new): larger files are refused."""


def _fail(message: str, **details: Any) -> ToolExecutionError:
    return ToolExecutionError(message, retryable=False, details=details)


def _find_program(program: str, cwd_fd: int, path: str) -> None:
    """Refuse a program that cannot be found or run, before anything starts."""
    if "/" in program:
        try:
            os.stat(program, dir_fd=cwd_fd)
        except OSError:
            raise _fail(f"command not found: {program!r}", command=program) from None
        if not os.access(program, os.X_OK, dir_fd=cwd_fd):
            raise _fail(f"command is not executable: {program!r}", command=program)
    elif shutil.which(program, path=path) is None:
        raise _fail(f"command not found: {program!r}", command=program)


def register_workspace_tools(
    registry: ToolRegistry,
    root: str | os.PathLike[str],
    *,
    allow_commands: bool = True,
    command_timeout: float = 30,
    max_output_bytes: int = 64_000,
    approval_for_writes: bool = True,
    approval_for_commands: bool = True,
    prefix: str = "",
    max_matches: int = 100,
    max_entries: int = 1000,
    shell_commands: bool = False,
    command_env: Mapping[str, str] | None = None,
    search_timeout: float = 10,
) -> list[RegisteredTool]:
    """Register file and command tools confined to `root`.

    Args:
        registry: Where to register the tools.
        root: The workspace directory (must exist).
        allow_commands: Register `run_command`.
        command_timeout: Longest a command may run, in seconds; a call may ask for less.
        max_output_bytes: Bound on what `read_file`, `list_files` and `search_files`
            return, and on each of a command's stdout and stderr.
        approval_for_writes: `write_file` and `edit_file` wait for a person's approval.
        approval_for_commands: `run_command` waits for a person's approval.
        prefix: Put before every tool name (`"ws_"` gives `ws_read_file`).
        max_matches: Most matches `search_files` reports.
        max_entries: Most entries `list_files` reports.
        shell_commands: Run a string command with `/bin/sh -c` (default: split it
            with `shlex` and run it without a shell).
        command_env: Extra environment variables for commands. Commands never inherit
            the worker's environment (which may hold secrets): they get `PATH`, `HOME`
            (the workspace), `LANG` and these.
        search_timeout: Seconds one `search_files` call may take, matching included;
            past it the call fails with an error that says so.

    Returns:
        The registered tools.
    """
    workspace = Workspace(root)
    where = str(workspace.root)
    reads: dict[str, Any] = {
        "read_only": True,
        "idempotent": True,
        "filesystem": True,
        "workspace_root": where,
        "start_to_close_timeout": 30,
        "tags": ("workspace",),
    }
    writes: dict[str, Any] = {
        "filesystem": True,
        "workspace_root": where,
        "side_effect": "internal",
        "start_to_close_timeout": 30,
        "approval": approval_for_writes,
        "tags": ("workspace",),
    }

    def read_file(
        path: str, offset: int = 1, limit: int | None = None, byte_offset: int = 0
    ) -> str:
        """Read a text file of the workspace.

        Args:
            path: The file, relative to the workspace root.
            offset: The first line to return (1 is the first line).
            limit: How many lines to return; all by default (within the output bound).
            byte_offset: Bytes of line `offset` to skip: to read on in a line too long
                to show at once (the cut note says which value to pass).
        """
        first = max(offset, 1)
        last = first + limit - 1 if limit is not None and limit > 0 else None
        with workspace.locate(path, want="file") as located:
            fd = located.open(path)
        try:
            head = os.pread(fd, BINARY_SNIFF, 0)
            if is_binary(head):
                raise _fail(
                    f"{path!r} is a binary file ({os.fstat(fd).st_size} bytes); "
                    "read_file shows text files only",
                    path=path,
                )
            window = read_window(fd, first, last, max(byte_offset, 0), max_output_bytes)
        finally:
            os.close(fd)
        text = window.data.decode("utf-8", "replace")
        total = window.total
        if total == 0:
            return f"({path} is empty)"
        if first > total:
            return f"(offset {first} is past the end: {path} has {total} lines)"
        if window.cut is not None:
            line, at = window.cut
            return text + (
                f"\n[line {line} is {window.cut_line_bytes} bytes, cut at byte {at} "
                f"(the file has {total} line{'s' if total != 1 else ''}); call read_file "
                f"with offset={line} and "
                f"byte_offset={at} for the rest of it]"
            )
        shown_last = window.last
        if first > 1 or shown_last < total or byte_offset > 0:
            text += (
                f"\n[lines {first}-{shown_last} of {total}; call read_file with "
                f"offset={shown_last + 1} for more]"
                if shown_last < total
                else f"\n[lines {first}-{shown_last} of {total}]"
            )
        return text

    def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace, creating it (and its directories) if needed.

        Args:
            path: The file, relative to the workspace root.
            content: The whole new content of the file.
        """
        if not workspace.parts(path):
            raise WorkspacePathError(path, "is_a_directory", "it names the workspace root")
        data = content.encode("utf-8")
        with workspace.locate(path, want="file", must_exist=False, create_parents=True) as located:
            assert located.name is not None  # want="file" never ends on a directory
            replace_at(located.dir_fd, located.name, data, path)
        how = "overwritten" if located.exists else "new file"
        return f"wrote {len(data)} bytes to {located.relative} ({how})"

    def edit_file(path: str, old_text: str, new_text: str, count: int = 1) -> str:
        """Replace exact text in a workspace file.

        Args:
            path: The file, relative to the workspace root.
            old_text: The exact text to replace, whitespace included.
            new_text: What to put instead.
            count: Most occurrences to replace; more occurrences than this is an error.
        """
        if not old_text:
            raise _fail("old_text is empty; give the exact text to replace", path=path)
        if count < 1:
            raise _fail("count must be at least 1", path=path)
        with workspace.locate(path, want="file") as located:
            assert located.name is not None
            with os.fdopen(located.open(path), "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > _MAX_EDIT_BYTES:
                    raise _fail(
                        f"{path!r} is {size} bytes, more than edit_file edits "
                        f"({_MAX_EDIT_BYTES}); use run_command with a stream editor",
                        path=path,
                    )
                original = handle.read(_MAX_EDIT_BYTES + 1)
            if is_binary(original):
                raise _fail(
                    f"{path!r} is a binary file; edit_file edits text files only", path=path
                )
            text = original.decode("utf-8", "surrogateescape")
            found = text.count(old_text)
            if found == 0:
                raise _fail(
                    f"old_text was not found in {path!r}; read the file and copy the exact "
                    "text, whitespace and line breaks included",
                    path=path,
                )
            if found > count:
                raise _fail(
                    f"old_text occurs {found} times in {path!r}, more than count={count}; "
                    f"include more surrounding text to make it unique, or pass count={found}",
                    path=path,
                    occurrences=found,
                )
            data = text.replace(old_text, new_text).encode("utf-8", "surrogateescape")
            replace_at(located.dir_fd, located.name, data, path)
        return f"replaced {found} occurrence{'s' if found > 1 else ''} in {located.relative}"

    def list_files(path: str = ".", pattern: str | None = None, recursive: bool = False) -> str:
        """List a workspace directory: directories end with '/', symlinks with '@'.

        Args:
            path: The directory, relative to the workspace root.
            pattern: A glob on names (`*.py`), or on relative paths if it contains '/'.
            recursive: Include subdirectories (version-control directories are not entered).
        """
        lines: list[str] = []
        used = 0
        more = 0
        wanted = compile_glob(pattern, "pattern") if pattern else None
        with workspace.locate(path, want="dir") as located:
            for relative, entry, _ in walk_fd(located.dir_fd, recursive):
                symlink = entry.is_symlink()
                suffix = "@" if symlink else "/" if entry.is_dir(follow_symlinks=False) else ""
                if wanted is not None and not wanted(
                    relative if "/" in (pattern or "") else entry.name
                ):
                    continue
                line = relative + suffix
                if len(lines) >= max_entries or used + len(line) + 1 > max_output_bytes:
                    more += 1
                    continue
                lines.append(line)
                used += len(line) + 1
        if more:
            lines.append(f"[... {more} more entries not shown; narrow the path or pattern]")
        return "\n".join(lines) if lines else "(no entries)"

    limits = SearchLimits(
        seconds=search_timeout, max_matches=max_matches, max_output_bytes=max_output_bytes
    )

    def search_files(pattern: str, path: str = ".", glob: str | None = None) -> str:
        """Search workspace files for a regular expression (RE2 syntax), line by line.

        Args:
            pattern: The regular expression, RE2 syntax (no backreferences or lookaround).
            path: A directory (searched recursively) or a file, relative to the root.
            glob: Only files whose name matches this glob, e.g. `*.py`.
        """
        return search(workspace, pattern, path, glob, limits)

    async def run_command(
        command: list[str] | str,
        cwd: str = ".",
        timeout: float | None = None,
    ) -> ToolResult:
        """Run a command in the workspace (no shell): its exit code, stdout and stderr.

        Args:
            command: The program and its arguments, e.g. ["pytest", "-q"], or one string
                split like a shell would (no pipes or redirections).
            cwd: The working directory, relative to the workspace root.
            timeout: Seconds before the command is killed (at most the configured limit).
        """
        if isinstance(command, str):
            argv = ["/bin/sh", "-c", command] if shell_commands else shlex.split(command)
        else:
            argv = list(command)
        if not argv or not argv[0]:
            raise _fail("the command is empty")
        limit = min(timeout, command_timeout) if timeout and timeout > 0 else command_timeout
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": where,
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            **(command_env or {}),
        }
        with workspace.locate(cwd, want="dir") as located:
            _find_program(argv[0], located.dir_fd, env["PATH"])
            done = await run_supervised(argv, located.dir_fd, env, limit, max_output_bytes)
        out, err = done.stdout, done.stderr
        status = f"exit code {done.exit_code}"
        if done.timed_out:
            status = f"timed out after {limit:g}s (killed, with everything it started)"
        text = f"$ {shlex.join(argv)}\n{status}\n--- stdout ---\n{out.text()}"
        text += f"\n--- stderr ---\n{err.text()}"
        return ToolResult(
            content=[ContentBlock(type="text", text=text)],
            structured={
                "exit_code": done.exit_code,
                "timed_out": done.timed_out,
                "stdout": out.text(),
                "stderr": err.text(),
                "stdout_bytes": out.total,
                "stderr_bytes": err.total,
                "truncated": out.truncated or err.truncated,
            },
            is_error=done.timed_out,
        )

    tools = [
        registry.register(read_file, name=f"{prefix}read_file", **reads),
        registry.register(write_file, name=f"{prefix}write_file", idempotent=True, **writes),
        registry.register(edit_file, name=f"{prefix}edit_file", idempotent=False, **writes),
        registry.register(list_files, name=f"{prefix}list_files", **reads),
        registry.register(search_files, name=f"{prefix}search_files", **reads),
    ]
    if allow_commands:
        tools.append(
            registry.register(
                run_command,
                name=f"{prefix}run_command",
                shell=True,
                filesystem=True,
                networked=True,
                workspace_root=where,
                side_effect="external",
                approval=approval_for_commands,
                start_to_close_timeout=command_timeout + 15,
                tags=("workspace",),
            )
        )
    return tools
