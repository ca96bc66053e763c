"""Running one command for `run_command`: under a supervisor, bounded in time and output.

The command runs under `_reaper.py` (see its docstring for why a separate supervisor):
when the command exits, times out or is cancelled, everything it started is killed,
background jobs and `setsid` children included, so nothing outlives the call and no
grandchild can hold stdout open past the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Capture", "Finished", "run_supervised"]

_REAPER = str(Path(__file__).with_name("_reaper.py"))
_STOP_GRACE = 5.0
"""Seconds the supervisor gets to kill and reap everything before it is killed itself."""


class Capture:
    """Bytes of a stream, bounded: the head and the tail, and how many were dropped."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(limit * 3 // 4, 1)
        self.tail_limit = max(limit - self.head_limit, 0)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        """Keep what fits of `chunk`, and count all of it."""
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit:
            self.tail += chunk[-self.tail_limit :]
            del self.tail[: max(len(self.tail) - self.tail_limit, 0)]

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped."""
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        """What was kept, with a note of how much was dropped in the middle."""
        head = self.head.decode("utf-8", "replace")
        if not self.truncated:
            return head + self.tail.decode("utf-8", "replace")
        dropped = self.total - len(self.head) - len(self.tail)
        tail = self.tail.decode("utf-8", "replace")
        return f"{head}\n[... {dropped} bytes omitted ...]\n{tail}"


@dataclass
class Finished:
    """How a command ended."""

    exit_code: int | None
    timed_out: bool
    stdout: Capture
    stderr: Capture


async def _pump(stream: asyncio.StreamReader | None, capture: Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        capture.add(chunk)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Ask the supervisor to end everything; kill its group if it does not in time."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), _STOP_GRACE)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


async def run_supervised(
    argv: list[str],
    cwd_fd: int,
    env: Mapping[str, str],
    timeout: float,
    max_output_bytes: int,
) -> Finished:
    """Run `argv` in the directory `cwd_fd`, killing all it started when it ends.

    Raises:
        FileNotFoundError: the supervisor could not start (no Python interpreter).
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",  # isolated: the command's PYTHON* variables are not the supervisor's
        "-S",
        _REAPER,
        str(cwd_fd),
        str(os.getpid()),
        "--",
        *argv,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=(cwd_fd,),
        start_new_session=True,  # a signal to the worker's group does not reach it
    )
    out, err = Capture(max_output_bytes), Capture(max_output_bytes)
    readers = asyncio.gather(_pump(process.stdout, out), _pump(process.stderr, err))
    timed_out = False
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        timed_out = True
        await _stop(process)
    except asyncio.CancelledError:
        await asyncio.shield(_stop(process))
        raise
    finally:
        # Everything the command started is dead now, so the pipes are closed; the
        # bound is for a supervisor that was itself killed.
        try:
            await asyncio.wait_for(asyncio.shield(readers), _STOP_GRACE)
        except TimeoutError:
            readers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await readers
    return Finished(None if timed_out else process.returncode, timed_out, out, err)
