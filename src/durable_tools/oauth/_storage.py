"""Encryption at rest and file locking shared by the token and pending-state stores."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from ._errors import TokenKeyError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: locks hold within a process only
    fcntl = None  # type: ignore[assignment]

__all__ = ["KEY_ENV", "EncryptedJsonFile", "generate_key", "load_key"]

KEY_ENV = "DURABLE_TOOLS_TOKEN_KEY"
"""Environment variable holding the Fernet key (or several, comma-separated, newest first)."""

_T = TypeVar("_T")


def generate_key() -> str:
    """A new random Fernet key, for `DURABLE_TOOLS_TOKEN_KEY`."""
    return Fernet.generate_key().decode("ascii")


def load_key(key: str | bytes | None = None) -> MultiFernet:
    """The cipher for tokens at rest.

    Args:
        key: A Fernet key, or several comma-separated (the first encrypts, all decrypt: key
            rotation). Default: the `DURABLE_TOOLS_TOKEN_KEY` environment variable.

    Raises:
        TokenKeyError: No key is given or set, or a key is not a valid Fernet key.
    """
    if key is None:
        key = os.environ.get(KEY_ENV, "")
    text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
    parts = [part.strip() for part in text.split(",") if part.strip()]
    hint = (
        "make one with `python -c 'from durable_tools.oauth import generate_key; "
        "print(generate_key())'`"
    )
    if not parts:
        raise TokenKeyError(f"{KEY_ENV} is not set: OAuth tokens are encrypted at rest; {hint}")
    fernets = []
    for index, part in enumerate(parts):
        try:
            fernets.append(Fernet(part))
        except (ValueError, TypeError):
            # Never echo the key itself.
            raise TokenKeyError(
                f"{KEY_ENV} key #{index + 1} is not a valid Fernet key "
                f"(32 url-safe base64-encoded bytes); {hint}"
            ) from None
    return MultiFernet(fernets)


@contextlib.contextmanager
def _flock(path: Path, exclusive: bool = True) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class EncryptedJsonFile:
    """A JSON object in a Fernet-encrypted file, read and rewritten under a file lock.

    Writes go to a temporary file that replaces the old one, so a crash never leaves a
    half-written store. The file and its lock are created with mode 0600.
    """

    def __init__(self, path: str | os.PathLike[str], cipher: MultiFernet) -> None:
        self.path = Path(path)
        self._cipher = cipher
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    async def read(self) -> dict[str, Any]:
        """The current content ({} if the file does not exist yet)."""
        return await asyncio.to_thread(self._read_locked)

    async def update(self, change: Callable[[dict[str, Any]], _T]) -> _T:
        """Apply `change` to the content in place, under an exclusive lock, and save it."""
        return await asyncio.to_thread(self._update_locked, change)

    def _read_locked(self) -> dict[str, Any]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _flock(self._lock_path, exclusive=False):
            return self._load()

    def _update_locked(self, change: Callable[[dict[str, Any]], _T]) -> _T:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _flock(self._lock_path):
            data = self._load()
            result = change(data)
            self._save(data)
            return result

    def _load(self) -> dict[str, Any]:
        try:
            blob = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            plain = self._cipher.decrypt(blob)
        except InvalidToken:
            raise TokenKeyError(
                f"cannot decrypt {self.path}: it was written with another key "
                "(check DURABLE_TOOLS_TOKEN_KEY)"
            ) from None
        data = json.loads(plain)
        if not isinstance(data, dict):
            raise TokenKeyError(f"{self.path} does not hold a JSON object")
        return data

    def _save(self, data: dict[str, Any]) -> None:
        blob = self._cipher.encrypt(json.dumps(data, separators=(",", ":")).encode())
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
