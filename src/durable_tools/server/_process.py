"""Keeping the embedded server's `temporal` child tied to its parent.

Two guards, because either alone leaves a gap:

- `spawn()` starts the child with a Linux parent-death signal, so a `kill -9` of the Python
  process takes the child with it. The kernel sends that signal when the *thread* that forked
  the child exits, not the process: a server started from a short-lived thread (an
  `asyncio.to_thread` call, a loop in a worker thread) would be killed when that thread
  ends. So every child is forked by one daemon thread that lives as long as the process.
- `PidFile` records the child's pid, command line and parent in the data directory, so the
  next start can find a dev server of the same data directory that survived anyway (macOS
  has no parent-death signal; a child can hang in shutdown) and stop it. A pid is trusted
  only if `/proc/PID/cmdline` still reads exactly as recorded: a pid reused by an unrelated
  process is never signalled. A child whose recorded parent is still its parent did not
  outlive anything, and a detached child (`demo --keep-server`) is meant to run on alone:
  neither is a leftover.

A detached child (`spawn(..., detached=True)`) gets no parent-death signal and a session of
its own, so neither its parent's exit nor a Ctrl-C at the parent's terminal stops it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["PidFile", "ServerRecord", "parent_pid", "process_cmdline", "spawn", "stop_process"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_Job = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]
_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _serve_jobs() -> None:
    while True:
        job, future = _jobs.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(job())
        except BaseException as error:  # handed to the awaiting caller
            future.set_exception(error)


def _on_spawner_thread(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(
                target=_serve_jobs, name="durable-tools-server-spawner", daemon=True
            )
            _spawner.start()
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    _jobs.put((job, future))
    return future


def _parent_death_signal() -> Callable[[], None] | None:
    """A `preexec_fn` arming SIGTERM on parent death, or None where Linux's prctl is absent."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:
        # In the child, between fork and exec (the setting survives exec). SIGTERM, not
        # SIGKILL: the dev server then closes its SQLite database cleanly.
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:
            os._exit(1)  # the parent died before the signal was armed

    return arm


async def spawn(
    cmd: Sequence[str], *, detached: bool = False, **options: Any
) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(cmd, **options)`, forked by the long-lived spawner thread, with a
    parent-death signal on Linux.

    Args:
        cmd: The command line.
        detached: Let the child outlive this process: no parent-death signal, and a new
            session (a Ctrl-C at this process's terminal does not reach it).
        **options: More `Popen` options.
    """
    hook = None if detached else _parent_death_signal()

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(list(cmd), preexec_fn=hook, start_new_session=detached, **options)

    started: subprocess.Popen[bytes] = await asyncio.wrap_future(_on_spawner_thread(start))
    return started


def process_cmdline(pid: int) -> list[str] | None:
    """The command line of a live process, None if it is gone, a zombie, or unreadable
    (no /proc: not Linux)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if not raw:
        return None  # a zombie: exited, not yet reaped
    return [part.decode(errors="surrogateescape") for part in raw.rstrip(b"\0").split(b"\0")]


def parent_pid(pid: int) -> int | None:
    """The parent of a live process (from `/proc/PID/stat`), None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so split after
    # the last ")".
    fields = stat[stat.rfind(")") + 1 :].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


class ServerRecord(NamedTuple):
    """What `server.pid` says of a running dev server."""

    pid: int
    cmdline: list[str]
    parent: int | None
    """The process that started it; None in a record written before parents were recorded."""
    detached: bool
    """Started to outlive its parent (`demo --keep-server`)."""

    def parent_lives(self) -> bool:
        """True while the process that started the server is still its parent."""
        return self.parent is not None and parent_pid(self.pid) == self.parent


class PidFile:
    """`server.pid` in a data directory: `{"pid": N, "cmdline": [...], "parent": P,
    "detached": false}` of the running child.

    Args:
        path: The file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(
        self,
        pid: int,
        cmdline: Sequence[str],
        *,
        parent: int | None = None,
        detached: bool = False,
    ) -> None:
        """Record a started child (replacing the file atomically).

        Args:
            pid: The child.
            cmdline: Its command line.
            parent: The process that started it; default this one.
            detached: It is meant to outlive its parent.
        """
        record = {
            "pid": pid,
            "cmdline": list(cmdline),
            "parent": os.getpid() if parent is None else parent,
            "detached": detached,
        }
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, self.path)

    def remove(self, pid: int | None = None) -> None:
        """Forget the child (it was stopped).

        Args:
            pid: Only if the file still records this pid: a server stopping must not
                delete the record of another that started since.
        """
        if pid is not None:
            recorded = self._read()
            if recorded is not None and recorded.pid != pid:
                return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _read(self) -> ServerRecord | None:
        """The record as written, None if missing or unreadable."""
        try:
            record = json.loads(self.path.read_text())
            parent = record.get("parent")
            return ServerRecord(
                pid=int(record["pid"]),
                cmdline=[str(part) for part in record["cmdline"]],
                parent=parent if isinstance(parent, int) and parent > 0 else None,
                detached=record.get("detached") is True,
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def live(self) -> ServerRecord | None:
        """The record if its process still runs exactly the recorded command line, else None
        (a stale or unreadable file is removed)."""
        if not self.path.exists():
            return None
        record = self._read()
        if record is None or record.pid <= 0 or process_cmdline(record.pid) != record.cmdline:
            self.remove()
            return None
        return record


def stop_process(pid: int, cmdline: Sequence[str], grace: float, kill_wait: float = 5.0) -> bool:
    """Stop a process we did not start: SIGTERM, then SIGKILL after `grace` seconds.

    Every signal is sent only while `/proc/PID/cmdline` still equals `cmdline`, so a pid
    that an unrelated process took over in between is left alone.

    Returns:
        True once the process is gone, False if it outlived SIGKILL by `kill_wait` seconds.
    """
    expected = list(cmdline)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, kill_wait)):
        if process_cmdline(pid) != expected:
            return True
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if process_cmdline(pid) != expected:
                return True
            time.sleep(0.05)
    return process_cmdline(pid) != expected
