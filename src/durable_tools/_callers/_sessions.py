"""Sessions ended by logout: a small JSON file beside the tokens file, so that a signed
session cookie stops working everywhere it was accepted (the inbox, its replicas, the codec
server) once its user logs out, and stays refused after a restart.

A session cookie is signed, so the server keeps no record of the sessions it hands out;
only of those ended before their time. Each session carries a random id and when it was
issued; an ended one is remembered until the cookie would have expired anyway. The list is
bounded: when it is full, every session issued until then is ended at once (people sign in
again), which keeps it small without ever letting an ended session back in.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["SESSION_AGE", "EndedSessions", "ended_sessions_file"]

SESSION_AGE = 12 * 3600
"""Seconds a session lasts (the cookie's signature expires then too)."""
_CAPACITY = 10_000
_log = logging.getLogger(__name__)


def ended_sessions_file(tokens_file: Path) -> Path:
    """Where the sessions of a tokens file's users are recorded as ended."""
    return tokens_file.with_name(f"{tokens_file.stem}.logouts.json")


class EndedSessions:
    """The sessions ended before their time, shared through a file.

    Args:
        path: The JSON file (made on the first logout, mode 0600); None keeps the list in
            this process only.
        max_age: Seconds a session lasts from when it was issued.
        capacity: Ended sessions remembered at most.
    """

    def __init__(
        self, path: Path | None, max_age: float = SESSION_AGE, capacity: int = _CAPACITY
    ) -> None:
        self.path = path
        self.max_age = max_age
        self.capacity = capacity
        self._ended: dict[str, float] = {}  # session id -> when its cookie expires anyway
        self._not_before = 0.0  # sessions issued before this are all ended
        self._mtime: float | None = None

    def __len__(self) -> int:
        """Ended sessions remembered one by one (the watermark covers the others)."""
        return len(self._ended)

    def begin(self) -> tuple[str, float]:
        """A new session's id and issue time (to keep in the signed cookie)."""
        return secrets.token_urlsafe(16), time.time()

    def is_live(self, session_id: object, issued_at: object) -> bool:
        """Whether a session is neither expired, nor ended by a logout or a purge."""
        if not isinstance(session_id, str) or not isinstance(issued_at, int | float):
            return False  # a cookie from before sessions had ids: sign in again
        if not math.isfinite(issued_at) or issued_at + self.max_age < time.time():
            return False
        self._reload()
        return issued_at >= self._not_before and session_id not in self._ended

    def end(self, session_id: object, issued_at: object) -> None:
        """Record a session as ended (logout). A file that cannot be written is logged, and
        the session is still refused by this process."""
        if not isinstance(session_id, str) or not isinstance(issued_at, int | float):
            return
        if not math.isfinite(issued_at):
            return
        with self._locked():
            self._reload(force=True)
            self._ended[session_id] = issued_at + self.max_age
            self._prune()
            self._write()

    # ------------------------------------------------------------------ file

    def _prune(self) -> None:
        now = time.time()
        # Kept only while they matter: not yet expired, and issued after the watermark
        # (the watermark already ends those issued before).
        self._ended = {
            sid: until
            for sid, until in self._ended.items()
            if until > now and until - self.max_age >= self._not_before
        }
        if len(self._ended) > self.capacity:
            # Full: end every session issued so far rather than forget an ended one.
            self._not_before = now
            self._ended.clear()

    def _reload(self, force: bool = False) -> None:
        if self.path is None:
            return
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return
        if mtime == self._mtime and not force:
            return
        try:
            data: Any = json.loads(self.path.read_text())
            ended = data["ended"]
            not_before = float(data["not_before"])
            merged = {str(k): float(v) for k, v in ended.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            # Unreadable: end every session issued until now (fail closed) and say why.
            _log.warning(
                "ended-sessions file %s unreadable (%s): ending all sessions", self.path, error
            )
            merged, not_before = {}, time.time()
        # Merged, not replaced: an end this process could not write stays in force here.
        self._ended.update(merged)
        self._not_before = max(self._not_before, not_before)
        self._mtime = mtime
        self._prune()

    def _write(self) -> None:
        if self.path is None:
            return
        data = {"not_before": self._not_before, "ended": self._ended}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".logouts-")
            try:
                with os.fdopen(fd, "w") as out:
                    json.dump(data, out)
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._mtime = self.path.stat().st_mtime
        except OSError as error:
            _log.warning("cannot record a logout in %s: %s", self.path, error)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # Replicas of the inbox may share the file: one read-modify-write at a time.
        if self.path is None:
            yield
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = open(self.path.with_name(self.path.name + ".lock"), "a")  # noqa: SIM115
        except OSError:
            yield
            return
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
