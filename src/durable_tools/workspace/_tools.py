"""Built-in workspace tools: read, write, edit, list and search files, and run commands.

Opt-in (`register_workspace_tools`), confined to one root by `Workspace`, with
truthful safety metadata and bounded outputs. File tools never follow a path outside
the root. `run_command` starts its process with the workspace as the working directory
and a minimal environment, but it is not a sandbox: that is why it asks for approval by
default.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
import shlex
import signal
import stat
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from durable_tools.tools._errors import ToolExecutionError
from durable_tools.tools._registry import RegisteredTool, ToolRegistry
from durable_tools.tools._results import ContentBlock, ToolResult

from ._paths import Workspace, WorkspacePathError

__all__ = ["register_workspace_tools"]

_SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
_MAX_LINE_CHARS = 300
_MAX_SEARCH_FILE_BYTES = 4_000_000
_BINARY_SNIFF = 8192


def _fail(message: str, **details: Any) -> ToolExecutionError:
    return ToolExecutionError(message, retryable=False, details=details)


def _open_regular(real: Path, path: str, flags: int = os.O_RDONLY) -> int:
    """Open without following a final symlink or blocking on a FIFO, and check the kind."""
    fd = os.open(real, flags | os.O_NOFOLLOW | os.O_NONBLOCK)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise WorkspacePathError(path, "special_file", "it is not a regular file")
    return fd


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:_BINARY_SNIFF]


class _Capture:
    """Bytes of a stream, bounded: the head and the tail, and how many were dropped."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(limit * 3 // 4, 1)
        self.tail_limit = max(limit - self.head_limit, 0)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit:
            self.tail += chunk
            del self.tail[: max(len(self.tail) - self.tail_limit, 0)]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        if not self.truncated:
            return head + self.tail.decode("utf-8", "replace")
        dropped = self.total - len(self.head) - len(self.tail)
        tail = self.tail.decode("utf-8", "replace")
        return f"{head}\n[... {dropped} bytes omitted ...]\n{tail}"


async def _pump(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        capture.add(chunk)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


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

    def read_file(path: str, offset: int = 1, limit: int | None = None) -> str:
        """Read a text file of the workspace.

        Args:
            path: The file, relative to the workspace root.
            offset: The first line to return (1 is the first line).
            limit: How many lines to return; all by default (within the output bound).
        """
        real = workspace.resolve(path, want="file")
        first = max(offset, 1)
        last = first + limit - 1 if limit is not None and limit > 0 else None
        fd = _open_regular(real, path)
        out: list[str] = []
        used = 0
        total = 0
        cut_at: int | None = None
        with os.fdopen(fd, "rb") as handle:
            if _is_binary(handle.read(_BINARY_SNIFF)):
                raise _fail(
                    f"{path!r} is a binary file ({os.fstat(handle.fileno()).st_size} bytes); "
                    "read_file shows text files only",
                    path=path,
                )
            handle.seek(0)
            for number, raw in enumerate(handle, start=1):
                total = number
                if number < first or (last is not None and number > last) or cut_at:
                    continue
                line = raw.decode("utf-8", "replace")
                if used + len(raw) > max_output_bytes:
                    cut_at = number
                    continue
                out.append(line)
                used += len(raw)
        text = "".join(out)
        if total == 0:
            return f"({path} is empty)"
        if first > total:
            return f"(offset {first} is past the end: {path} has {total} lines)"
        shown_last = (cut_at - 1) if cut_at else min(last or total, total)
        if first > 1 or shown_last < total:
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
        target = workspace.resolve_for_write(path)
        existed = target.exists()
        data = content.encode("utf-8")
        _replace(target, data, path)
        shown = workspace.display(target)
        return f"wrote {len(data)} bytes to {shown} ({'overwritten' if existed else 'new file'})"

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
        real = workspace.resolve(path, want="file")
        fd = _open_regular(real, path)
        with os.fdopen(fd, "rb") as handle:
            original = handle.read()
        if _is_binary(original):
            raise _fail(f"{path!r} is a binary file; edit_file edits text files only", path=path)
        text = original.decode("utf-8", "surrogateescape")
        found = text.count(old_text)
        if found == 0:
            raise _fail(
                f"old_text was not found in {path!r}; read the file and copy the exact text, "
                "whitespace and line breaks included",
                path=path,
            )
        if found > count:
            raise _fail(
                f"old_text occurs {found} times in {path!r}, more than count={count}; include "
                f"more surrounding text to make it unique, or pass count={found}",
                path=path,
                occurrences=found,
            )
        _replace(real, text.replace(old_text, new_text).encode("utf-8", "surrogateescape"), path)
        return f"replaced {found} occurrence{'s' if found > 1 else ''} in {workspace.display(real)}"

    def list_files(path: str = ".", pattern: str | None = None, recursive: bool = False) -> str:
        """List a workspace directory: directories end with '/', symlinks with '@'.

        Args:
            path: The directory, relative to the workspace root.
            pattern: A glob on names (`*.py`), or on relative paths if it contains '/'.
            recursive: Include subdirectories (version-control directories are not entered).
        """
        real = workspace.resolve(path, want="dir")
        lines: list[str] = []
        used = 0
        more = 0
        for relative, entry in _walk(real, recursive):
            suffix = "@" if entry.is_symlink() else "/" if entry.is_dir() else ""
            subject = relative if pattern and "/" in pattern else entry.name
            if pattern and not fnmatch.fnmatchcase(subject, pattern):
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

    def search_files(pattern: str, path: str = ".", glob: str | None = None) -> str:
        """Search workspace files for a regular expression (Python syntax), line by line.

        Args:
            pattern: The regular expression.
            path: A directory (searched recursively) or a file, relative to the root.
            glob: Only files whose name matches this glob, e.g. `*.py`.
        """
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise _fail(f"invalid regular expression {pattern!r}: {exc}") from None
        real = workspace.resolve(path)
        files: Iterator[tuple[str, Path]]
        if real.is_dir():
            files = (
                (rel, Path(e.path))
                for rel, e in _walk(real, True)
                if e.is_file(follow_symlinks=False)
            )
        else:
            files = iter([(workspace.display(real), real)])
        lines: list[str] = []
        used = 0
        matches = 0
        in_files = 0
        stopped = False
        for relative, file in files:
            if glob and not fnmatch.fnmatchcase(file.name, glob):
                continue
            try:
                if file.stat().st_size > _MAX_SEARCH_FILE_BYTES:
                    continue
                data = file.read_bytes()
            except OSError:
                continue
            if _is_binary(data):
                continue
            hit = False
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if not regex.search(line):
                    continue
                if matches >= max_matches:
                    stopped = True
                    break
                shown = line if len(line) <= _MAX_LINE_CHARS else line[:_MAX_LINE_CHARS] + "..."
                entry = f"{relative}:{number}: {shown}"
                if used + len(entry) > max_output_bytes:
                    stopped = True
                    break
                lines.append(entry)
                used += len(entry) + 1
                matches += 1
                hit = True
            in_files += hit
            if stopped:
                break
        if not lines:
            return f"no matches for {pattern!r}"
        head = f"{matches} match{'es' if matches != 1 else ''} in {in_files} file"
        head += "s" if in_files != 1 else ""
        if stopped:
            head += f" (stopped at the limit of {max_matches}; narrow the search)"
        return head + "\n" + "\n".join(lines)

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
        directory = workspace.resolve(cwd, want="dir")
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
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=directory,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group, killed as a whole
            )
        except FileNotFoundError:
            raise _fail(f"command not found: {argv[0]!r}", command=argv[0]) from None
        except PermissionError:
            raise _fail(f"command is not executable: {argv[0]!r}", command=argv[0]) from None
        out, err = _Capture(max_output_bytes), _Capture(max_output_bytes)
        readers = asyncio.gather(_pump(process.stdout, out), _pump(process.stderr, err))
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), limit)
        except TimeoutError:
            timed_out = True
            _kill_group(process)
            await process.wait()
        except asyncio.CancelledError:
            _kill_group(process)
            raise
        finally:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(readers), 5)
        code = None if timed_out else process.returncode
        status = f"timed out after {limit:g}s (killed)" if timed_out else f"exit code {code}"
        text = f"$ {shlex.join(argv)}\n{status}\n--- stdout ---\n{out.text()}"
        text += f"\n--- stderr ---\n{err.text()}"
        return ToolResult(
            content=[ContentBlock(type="text", text=text)],
            structured={
                "exit_code": code,
                "timed_out": timed_out,
                "stdout": out.text(),
                "stderr": err.text(),
                "stdout_bytes": out.total,
                "stderr_bytes": err.total,
                "truncated": out.truncated or err.truncated,
            },
            is_error=timed_out,
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


def _walk(
    directory: Path, recursive: bool, prefix: str = ""
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Entries under `directory`, sorted, never following symlinks."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        yield relative, entry
        if recursive and entry.is_dir(follow_symlinks=False) and entry.name not in _SKIP_DIRS:
            yield from _walk(Path(entry.path), True, relative + "/")


def _replace(target: Path, data: bytes, path: str) -> None:
    """Write `data` to `target` atomically (a temporary file renamed over it)."""
    mode = 0o644
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(target)
        if not stat.S_ISREG(info.st_mode):
            raise WorkspacePathError(path, "special_file", "it is not a regular file")
        mode = stat.S_IMODE(info.st_mode)
    temporary = target.with_name(f".durable-tools-{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
