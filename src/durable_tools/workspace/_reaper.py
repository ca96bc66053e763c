"""A tiny supervisor `run_command` starts each command under (run as a script, stdlib only).

Why a supervisor: killing the command's process group misses children that left it
(`setsid sleep 1000 &`, daemons that double-fork), and such a child holding stdout open
kept the tool waiting. A session-id scan misses them too (`setsid` makes a new session).
So this process marks itself a *child subreaper* (Linux `prctl(PR_SET_CHILD_SUBREAPER)`):
every orphan below it, whatever session or group it moved to, is re-parented to it
instead of to init. When the command exits, or this process gets SIGTERM (the tool's
timeout or cancellation), or the worker that started it dies (`PR_SET_PDEATHSIG`), it
kills every process below it until none is left, reaps them all, and exits with the
command's status. Being a separate process, it changes nothing in the worker (a
subreaper worker would have to reap strangers' orphans and would race `asyncio`'s own
child watcher). Where `prctl` is missing (not Linux), it falls back to killing the
command's process group.

Usage: python _reaper.py CWD_FD PARENT_PID -- PROGRAM [ARG...]
Exit status: the command's, 128+N if a signal N killed it, 127 if it could not start.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

__all__: list[str] = []

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class _Stop(Exception):
    """A signal asked us to end the command."""


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    """Direct children of this process, from /proc."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and ')': the fields start after the last ')'.
        fields = text[text.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(name))
    return found


def _kill_all(group: int | None, subreaper: bool) -> None:
    """Kill every process below this one and reap them, until none is left."""
    if group is not None:  # the command's own group first: most of it, in one call
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    while True:
        if subreaper:
            for pid in _children():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)  # orphans of the killed come to us: loop on
        except ChildProcessError:
            return


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop


def main(argv: list[str]) -> int:
    """Run the command, then leave nothing of it behind."""
    cwd_fd, parent, program = int(argv[1]), int(argv[2]), argv[4:]
    subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if subreaper:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    status = 0
    group: int | None = None
    try:
        if os.getppid() != parent:  # the worker died before PDEATHSIG was set
            raise _Stop
        os.fchdir(cwd_fd)
        os.close(cwd_fd)
        try:
            child = os.posix_spawnp(program[0], program, dict(os.environ), setpgroup=0)
        except OSError as error:
            sys.stderr.write(f"durable-tools: cannot run {program[0]!r}: {error.strerror}\n")
            return 127
        group = child
        _, wait_status = os.waitpid(child, 0)
        status = os.waitstatus_to_exitcode(wait_status)
        status = 128 - status if status < 0 else status
    except _Stop:
        status = 128 + signal.SIGTERM
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        _kill_all(group, subreaper)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
