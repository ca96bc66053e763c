"""API tokens for the inbox: a JSON file of users, each with a token's sha256 and groups.

The file holds only hashes (`{"users": {"alice": {"token_sha256": "...", "groups": ["ops"],
"created": "2026-01-02T03:04:05+00:00"}}}`): a token is printed once when it is made and
never stored. Tokens are 32 random bytes, so a plain sha256 (no salt, no slow hash) cannot
be reversed by guessing.

Every change (`add_token`, `rotate_token`, `remove_token`) holds an exclusive lock on a
sibling lock file while it reads and rewrites the file, so two at once never lose one; the
file is replaced atomically and is always mode 0600.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from durable_tools.protocol._deciders import name_key

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: changes are atomic but not serialized
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FINGERPRINT_CHARS",
    "TokenEntry",
    "TokenFileError",
    "TokenStore",
    "User",
    "add_token",
    "hash_token",
    "list_tokens",
    "remove_token",
    "rotate_token",
]

FINGERPRINT_CHARS = 8
"""Hex characters of a token's hash that `inbox token list` shows: enough to tell two
tokens apart, nowhere near enough to stand for one."""

_T = TypeVar("_T")

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


def _entries(
    path: Path, data: dict[str, Any]
) -> dict[str, tuple[str, tuple[str, ...], str | None]]:
    """Each user's (token hash, groups, created) in a read file, checked.

    Raises:
        TokenFileError: an invalid user, token hash or group list.
    """
    found: dict[str, tuple[str, tuple[str, ...], str | None]] = {}
    people: dict[str, str] = {}
    for name, entry in data["users"].items():
        if not isinstance(name, str) or not valid_user(name) or not isinstance(entry, dict):
            raise TokenFileError(f"tokens file {path}: invalid user {name!r}")
        same = people.setdefault(name_key(name), name)
        if same != name:
            raise TokenFileError(_one_person(path, same, name))
        digest, groups = entry.get("token_sha256"), entry.get("groups", [])
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise TokenFileError(f"tokens file {path}: user {name!r} has no token_sha256")
        if not isinstance(groups, list) or not all(
            isinstance(g, str) and _GROUP.fullmatch(g) for g in groups
        ):
            raise TokenFileError(f"tokens file {path}: user {name!r} has invalid groups")
        created = entry.get("created")
        found[name] = (digest, tuple(groups), created if isinstance(created, str) else None)
    return found


def _one_person(path: Path, first: str, second: str) -> str:
    # Policies compare decider names case-insensitively (`protocol._deciders`): two users
    # spelled alike would decide as one person, each for the other.
    return (
        f"tokens file {path}: users {first!r} and {second!r} are one person to every "
        "approval policy (decider names compare without case): keep one of them"
    )


class TokenStore:
    """The users of a tokens file, checked on every request (the file is re-read when it
    changes, so `inbox token add` takes effect without a restart).

    Args:
        path: The JSON file; a missing file means no users.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._by_hash: dict[str, User] = {}
        self._reload()

    def _reload(self) -> None:
        try:
            found = self.path.stat()
            # A rewrite replaces the file (a new inode), which a coarse mtime may not show.
            stamp: tuple[int, int, int] | None = (found.st_ino, found.st_mtime_ns, found.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp == self._stamp and self._by_hash:
            return
        users = {
            digest: User(name, groups)
            for name, (digest, groups, _) in _entries(self.path, _read(self.path)).items()
        }
        self._by_hash, self._stamp = users, stamp

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


@dataclass(frozen=True)
class TokenEntry:
    """A user of the tokens file as `inbox token list` shows them: never the token."""

    name: str
    groups: tuple[str, ...]
    created: datetime | None
    """When the user's current token was made; None for entries written before it was kept."""
    fingerprint: str
    """The first `FINGERPRINT_CHARS` hex characters of the token's sha256."""


def list_tokens(path: Path) -> list[TokenEntry]:
    """The users of a tokens file, by name (a missing file has none).

    Raises:
        TokenFileError: an unreadable or malformed file.
    """
    return [
        TokenEntry(name, groups, _parse_created(created), digest[:FINGERPRINT_CHARS])
        for name, (digest, groups, created) in sorted(_entries(path, _read(path)).items())
    ]


def add_token(path: Path, user: str, groups: list[str] | None = None) -> str:
    """Make a new random token for `user`, store only its hash, and return the token.

    Replaces the user's previous token (keeping their groups unless `groups` is given).

    Raises:
        TokenFileError: an invalid user or group name, or an unreadable file.
    """
    _check_user(user)
    for group in groups or []:
        if not _GROUP.fullmatch(group):
            raise TokenFileError(f"invalid group name {_shown(group)} (letters, digits, ._-)")

    def change(users: dict[str, Any]) -> str:
        for other in users:
            if other != user and name_key(other) == name_key(user):
                raise TokenFileError(_one_person(path, other, user))
        previous = users.get(user, {})
        kept = previous.get("groups", []) if isinstance(previous, dict) else []
        return _new_token(users, user, sorted(set(groups)) if groups is not None else kept)

    return _update(path, change)


def rotate_token(path: Path, user: str) -> str:
    """Replace an existing user's token with a new one (groups kept) and return it.

    The old token stops working at once, sessions made with it too.

    Raises:
        TokenFileError: no such user, or an unreadable file.
    """
    _check_user(user)

    def change(users: dict[str, Any]) -> str:
        entry = _existing(path, users, user)
        return _new_token(users, user, entry.get("groups", []))

    return _update(path, change)


def remove_token(path: Path, user: str) -> None:
    """Remove a user: their token and sessions stop working at once.

    Raises:
        TokenFileError: no such user, or an unreadable file.
    """
    _check_user(user)

    def change(users: dict[str, Any]) -> None:
        _existing(path, users, user)
        del users[user]

    _update(path, change)


def _shown(name: str) -> str:
    """A name as an error message quotes it: escaped, and cut short if huge."""
    return repr(name) if len(name) <= 100 else f"{name[:100]!r}... ({len(name)} characters)"


def _check_user(user: str) -> None:
    if not valid_user(user):
        raise TokenFileError(f"invalid user name {_shown(user)} (letters, digits, ._@+-)")


def _existing(path: Path, users: dict[str, Any], user: str) -> dict[str, Any]:
    entry = users.get(user)
    if not isinstance(entry, dict):
        raise TokenFileError(f"tokens file {path} has no user {user!r}")
    return entry


def _new_token(users: dict[str, Any], user: str, groups: list[str]) -> str:
    token = secrets.token_urlsafe(32)
    users[user] = {
        "token_sha256": hash_token(token),
        "groups": groups,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return token


def _parse_created(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:  # a hand-edited file: shown as unknown rather than refused
        return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock for changing `path` (across processes and threads).

    The lock is a sibling file, not the tokens file itself, which each change replaces.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_NOFOLLOW: a lock file planted as a symlink opens nothing else in its place.
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path.with_name(f".{path.name}.lock"), flags, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _update(path: Path, change: Callable[[dict[str, Any]], _T]) -> _T:
    """Apply `change` to the file's users under the lock, then replace the file atomically
    (mode 0600, synced before it takes the old one's place)."""
    with _locked(path):
        data = _read(path)
        result = change(data["users"])
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tokens-")
        try:
            os.chmod(tmp, 0o600)  # mkstemp's mode already; said, not assumed
            with os.fdopen(fd, "w") as out:
                json.dump(data, out, indent=2, sort_keys=True)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return result
