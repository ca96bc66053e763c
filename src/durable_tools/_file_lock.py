"""An exclusive cross-process file lock for async code (the OAuth stores, the grant store).

Its own module so that the grant activities (`_activities`) and `oauth` share it without
either package importing the other.
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

__all__ = ["lock_file"]


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
