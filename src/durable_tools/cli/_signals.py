"""Stopping long-running commands (server, worker, OAuth callback) on Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal

__all__ = ["stop_on_signals"]


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM (where the loop supports signal handlers)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop
