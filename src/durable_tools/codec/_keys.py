"""Encryption keys with ids, so keys rotate: the current key encrypts, every key decrypts.

Keys come from `DURABLE_TOOLS_CODEC_KEYS` (`id1:BASE64,id2:BASE64`, the first is current),
from a JSON or TOML key file named by `DURABLE_TOOLS_CODEC_KEY_FILE`, or from any object
that satisfies `KeyProvider` (a KMS client that unwraps data keys, say), named by
`DURABLE_TOOLS_CODEC_KEY_PROVIDER=module:attr`.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "KEYS_ENV",
    "KEY_FILE_ENV",
    "KEY_PROVIDER_ENV",
    "CodecKeyError",
    "KeyProvider",
    "KeyRing",
    "key_provider_from_env",
]

KEYS_ENV = "DURABLE_TOOLS_CODEC_KEYS"
"""`id1:BASE64KEY,id2:BASE64KEY`; the first key is the current one."""
KEY_FILE_ENV = "DURABLE_TOOLS_CODEC_KEY_FILE"
"""A JSON or TOML file: `{"current": "id2", "keys": {"id1": "BASE64", "id2": "BASE64"}}`."""
KEY_PROVIDER_ENV = "DURABLE_TOOLS_CODEC_KEY_PROVIDER"
"""`module:attr` naming a `KeyProvider`, or a no-argument callable that returns one."""

KEY_BYTES = 32
"""AES-256."""
_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class CodecKeyError(ValueError):
    """Keys are missing, malformed or of the wrong size; the message never holds a key."""


@runtime_checkable
class KeyProvider(Protocol):
    """Where the codec gets its keys: `KeyRing`, or a KMS-backed object of your own.

    Both methods are called for every payload, so a KMS provider should unwrap its data
    keys once (at start, or on first use) and answer from memory.
    """

    def current(self) -> tuple[str, bytes]:
        """The id and 32 bytes of the key new payloads are encrypted with."""
        ...

    def key(self, key_id: str) -> bytes | None:
        """The 32 bytes of key `key_id`, or None if this provider does not know it."""
        ...


class KeyRing:
    """A fixed set of AES-256 keys by id; one of them is current.

    Rotation: put the new key first (or name it `current`) and keep the old ones, so that
    payloads written before the rotation still decrypt. Drop an old key only once no
    history that still matters was written with it.

    Args:
        keys: Key id to 32 raw bytes, in order.
        current: The id new payloads use; default the first key.

    Raises:
        CodecKeyError: no keys, a bad id, a key that is not 32 bytes, an unknown current id.
    """

    def __init__(self, keys: Mapping[str, bytes], current: str | None = None) -> None:
        if not keys:
            raise CodecKeyError("no encryption keys given")
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not _KEY_ID.fullmatch(key_id):
                raise CodecKeyError(f"invalid key id {key_id!r} (letters, digits, ._-; 64 max)")
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise CodecKeyError(f"key {key_id!r} must be {KEY_BYTES} bytes (AES-256)")
        current = current if current is not None else next(iter(keys))
        if current not in keys:
            raise CodecKeyError(f"current key {current!r} is not among the keys")
        self._keys = dict(keys)
        self._current = current

    def current(self) -> tuple[str, bytes]:
        """The id and bytes of the current key."""
        return self._current, self._keys[self._current]

    def key(self, key_id: str) -> bytes | None:
        """The key with this id, or None."""
        return self._keys.get(key_id)

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every key id, in order."""
        return tuple(self._keys)

    def __repr__(self) -> str:  # never the keys themselves
        return f"KeyRing(current={self._current!r}, key_ids={self.key_ids!r})"

    @classmethod
    def parse(cls, spec: str) -> KeyRing:
        """Keys from `id1:BASE64,id2:BASE64` (the first is current).

        Raises:
            CodecKeyError: a malformed entry, key or id.
        """
        keys: dict[str, bytes] = {}
        for position, entry in enumerate(e.strip() for e in spec.split(",") if e.strip()):
            key_id, sep, encoded = entry.partition(":")
            if not sep:
                raise CodecKeyError(f"key entry {position + 1} is not ID:BASE64KEY")
            if key_id.strip() in keys:
                raise CodecKeyError(f"key id {key_id.strip()!r} appears twice")
            keys[key_id.strip()] = _decode_key(key_id.strip(), encoded.strip())
        return cls(keys)

    @classmethod
    def from_file(cls, path: str | Path) -> KeyRing:
        """Keys from a JSON or TOML file (TOML when it ends in `.toml`).

        The file holds `keys` (id to base64 key, in order) and optionally `current`.

        Raises:
            CodecKeyError: an unreadable or malformed file.
        """
        path = Path(path)
        try:
            text = path.read_text()
            data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (OSError, ValueError) as error:
            raise CodecKeyError(f"cannot read key file {path}: {error}") from None
        keys = data.get("keys") if isinstance(data, dict) else None
        current = data.get("current") if isinstance(data, dict) else None
        if not isinstance(keys, dict) or not (current is None or isinstance(current, str)):
            raise CodecKeyError(f"key file {path}: expected {{'current': ID, 'keys': {{ID: KEY}}}}")
        decoded = {}
        for key_id, encoded in keys.items():
            if not isinstance(encoded, str):
                raise CodecKeyError(f"key file {path}: key {key_id!r} is not a base64 string")
            decoded[key_id] = _decode_key(key_id, encoded)
        return cls(decoded, current)


def _decode_key(key_id: str, encoded: str) -> bytes:
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise CodecKeyError(f"key {key_id!r} is not valid base64") from None


def key_provider_from_env(environ: Mapping[str, str] | None = None) -> KeyProvider | None:
    """The key provider the environment configures, or None when it configures none.

    Order: `DURABLE_TOOLS_CODEC_KEY_PROVIDER`, then `DURABLE_TOOLS_CODEC_KEYS`, then
    `DURABLE_TOOLS_CODEC_KEY_FILE`.

    Raises:
        CodecKeyError: a configured source that cannot be used (fail closed: a typo must
            not quietly turn encryption off).
    """
    env = os.environ if environ is None else environ
    if target := env.get(KEY_PROVIDER_ENV, "").strip():
        return _import_provider(target)
    if spec := env.get(KEYS_ENV, "").strip():
        return KeyRing.parse(spec)
    if path := env.get(KEY_FILE_ENV, "").strip():
        return KeyRing.from_file(path)
    return None


def _import_provider(target: str) -> KeyProvider:
    module_name, _, attr = target.partition(":")
    try:
        found: Any = getattr(importlib.import_module(module_name), attr or "provider")
    except (ImportError, AttributeError) as error:
        raise CodecKeyError(f"{KEY_PROVIDER_ENV}={target}: {error}") from None
    # A class (which has the methods too) or a factory is called; an instance is used as is.
    factory = isinstance(found, type) or (callable(found) and not isinstance(found, KeyProvider))
    provider = found() if factory else found
    if not isinstance(provider, KeyProvider):
        raise CodecKeyError(f"{KEY_PROVIDER_ENV}={target} is not a KeyProvider")
    return provider
