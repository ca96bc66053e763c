"""API tokens for the inbox: a JSON file of users, each with a token's sha256 and groups.

The file holds only hashes (`{"users": {"alice": {"token_sha256": "...", "groups": ["ops"]}}}`):
a token is printed once when it is made and never stored. Tokens are 32 random bytes, so a
plain sha256 (no salt, no slow hash) cannot be reversed by guessing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TokenFileError", "TokenStore", "User", "add_token", "hash_token"]

_USER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
_GROUP = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class TokenFileError(ValueError):
    """The tokens file is missing, malformed, or names an invalid user or group."""


@dataclass(frozen=True)
class User:
    """An authenticated person (or script)."""

    name: str
    groups: tuple[str, ...] = field(default=())
    via: str = "token"
    """How they were authenticated: token, session or proxy."""


def hash_token(token: str) -> str:
    """The sha256 hex digest stored for a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def valid_user(name: str) -> bool:
    """Whether `name` is an acceptable user name (also for proxy-supplied names)."""
    return _USER.fullmatch(name) is not None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {"users": {}}
    except (OSError, ValueError) as error:
        raise TokenFileError(f"cannot read tokens file {path}: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("users", {}), dict):
        raise TokenFileError(f"tokens file {path}: expected {{'users': {{NAME: {{...}}}}}}")
    data.setdefault("users", {})
    return data


class TokenStore:
    """The users of a tokens file, checked on every request (the file is re-read when it
    changes, so `inbox token add` takes effect without a restart).

    Args:
        path: The JSON file; a missing file means no users.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mtime: float | None = None
        self._by_hash: dict[str, User] = {}
        self._reload()

    def _reload(self) -> None:
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            mtime = None
        if mtime == self._mtime and self._by_hash:
            return
        users: dict[str, User] = {}
        for name, entry in _read(self.path)["users"].items():
            if not isinstance(name, str) or not valid_user(name) or not isinstance(entry, dict):
                raise TokenFileError(f"tokens file {self.path}: invalid user {name!r}")
            digest, groups = entry.get("token_sha256"), entry.get("groups", [])
            if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
                raise TokenFileError(f"tokens file {self.path}: user {name!r} has no token_sha256")
            if not isinstance(groups, list) or not all(
                isinstance(g, str) and _GROUP.fullmatch(g) for g in groups
            ):
                raise TokenFileError(f"tokens file {self.path}: user {name!r} has invalid groups")
            users[digest] = User(name, tuple(groups))
        self._by_hash, self._mtime = users, mtime

    def user_for(self, token: str) -> User | None:
        """The user a token belongs to, or None."""
        if not token or len(token) > 200:
            return None
        return self.user_for_hash(hash_token(token))

    def user_for_hash(self, digest: str) -> User | None:
        """The user whose stored token hash is `digest` (a session keeps the hash)."""
        self._reload()
        for stored, user in self._by_hash.items():
            if hmac.compare_digest(stored, digest):
                return user
        return None

    def groups_of(self, name: str) -> tuple[str, ...]:
        """The groups the file gives `name` (empty for unknown users)."""
        self._reload()
        for user in self._by_hash.values():
            if user.name == name:
                return user.groups
        return ()


def add_token(path: Path, user: str, groups: list[str] | None = None) -> str:
    """Make a new random token for `user`, store only its hash, and return the token.

    Replaces the user's previous token. The file is written atomically with mode 0600.

    Raises:
        TokenFileError: an invalid user or group name, or an unreadable file.
    """
    if not valid_user(user):
        raise TokenFileError(f"invalid user name {user!r} (letters, digits, ._@+-)")
    for group in groups or []:
        if not _GROUP.fullmatch(group):
            raise TokenFileError(f"invalid group name {group!r} (letters, digits, ._-)")
    data = _read(path)
    token = secrets.token_urlsafe(32)
    previous = data["users"].get(user, {})
    kept = previous.get("groups", []) if isinstance(previous, dict) else []
    data["users"][user] = {
        "token_sha256": hash_token(token),
        "groups": sorted(set(groups)) if groups is not None else kept,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tokens-")
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return token
