"""Exclusive cross-process file locks: waited for by async code (the OAuth stores, the grant
store), or tried once and held for a process's life (the embedded server's data directory).

Its own module so that the grant activities (`_activities`), `oauth` and the server share it
without any of them importing another.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: locks hold within a process only
    fcntl = None  # type: ignore[assignment]

__all__ = ["lock_file", "try_lock_file"]


@contextlib.asynccontextmanager
async def lock_file(path: Path, poll: float = 0.01) -> AsyncIterator[None]:
    """Hold an exclusive lock on `path` across processes, without blocking the event loop.

    Polls with a non-blocking flock, so a cancelled waiter never leaves a lock behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(poll)
        yield
    finally:
        os.close(fd)


def try_lock_file(path: Path) -> int | None:
    """Take an exclusive lock on `path` without waiting: the open file descriptor holding
    it, or None when another open file (in this process or another) holds it.

    The lock lasts until the descriptor is closed (`os.close`), which the kernel also does
    when the holding process dies, even of SIGKILL; the descriptor is not inherited by
    child processes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if fcntl is None:  # pragma: no cover - Windows: no lock to take
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
