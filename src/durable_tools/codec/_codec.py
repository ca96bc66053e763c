"""AES-256-GCM payload encryption with key ids (and optional zlib compression first).

Every payload that crosses to the Temporal server is encrypted whole (its metadata and
data serialized, so the server cannot even see the encoding): workflow inputs and results,
activity arguments and results, signals, updates, queries, memos, failure details.
Search attributes are not payloads the codec sees: the server must index them, so they
stay readable by design (keep them free of secrets).
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

from ._keys import KeyProvider, key_provider_from_env

__all__ = [
    "COMPRESS_ENV",
    "MAX_DECOMPRESSED_BYTES",
    "CodecError",
    "EncryptionCodec",
    "MalformedPayloadError",
    "PayloadTooLargeError",
    "codec_from_env",
    "data_converter",
    "data_converter_from_env",
]

COMPRESS_ENV = "DURABLE_TOOLS_CODEC_COMPRESS"
"""`1`/`true` compresses payloads with zlib before encrypting them (default off)."""

ENCODING = b"binary/encrypted"
CIPHER = b"AES256GCM"
ZLIB = b"zlib"
_NONCE_BYTES = 12  # 96 bits, the size GCM is built for
_TAG_BYTES = 16
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
"""Default bound on what one compressed payload may inflate to (zlib reaches ~1000:1, so a
2 MB payload could otherwise become 2 GB). Real payloads compress a few times at most."""


class CodecError(ValueError):
    """A payload could not be decrypted: unknown key id, tampered, or too large inflated."""


class PayloadTooLargeError(CodecError):
    """A compressed payload that would inflate past the bound (a decompression bomb)."""


class MalformedPayloadError(CodecError):
    """An encrypted payload that is not well formed: too short to hold a nonce and a tag,
    an unknown cipher or compression."""


def _associated_data(key_id: bytes, compression: bytes) -> bytes:
    # Binds the metadata the server could rewrite (key id, compression flag) to the
    # ciphertext: changing either makes the payload fail authentication.
    return b"durable-tools/codec/v1\x00" + key_id + b"\x00" + compression


class EncryptionCodec(PayloadCodec):
    """Encrypts payloads with the current key; decrypts with whichever key wrote them.

    A payload that is not encrypted (written before encryption was turned on) passes
    through `decode` unchanged, so old histories stay readable.

    Args:
        keys: A `KeyRing` or any `KeyProvider`.
        compress: zlib-compress before encrypting. Compressed length can hint at content
            when an attacker also controls part of the plaintext; off by default.
        max_decompressed_bytes: A compressed payload that inflates to more is refused.
    """

    def __init__(
        self,
        keys: KeyProvider,
        compress: bool = False,
        max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES,
    ) -> None:
        self.keys = keys
        self.compress = compress
        self.max_decompressed_bytes = max_decompressed_bytes

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt each payload whole (metadata and data) with the current key."""
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt encrypted payloads; pass the others through.

        Raises:
            CodecError: naming the key id and what was wrong.
        """
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        """One payload, encrypted."""
        key_id, key = self.keys.current()
        plain = payload.SerializeToString()
        compression = ZLIB if self.compress else b""
        if self.compress:
            plain = zlib.compress(plain)
        nonce = os.urandom(_NONCE_BYTES)
        sealed = AESGCM(key).encrypt(nonce, plain, _associated_data(key_id.encode(), compression))
        metadata = {
            "encoding": ENCODING,
            "encryption-key-id": key_id.encode(),
            "encryption-cipher": CIPHER,
        }
        if compression:
            metadata["compression"] = compression
        return Payload(metadata=metadata, data=nonce + sealed)

    def decrypt(self, payload: Payload, max_bytes: int | None = None) -> Payload:
        """One payload, decrypted (or unchanged if it was not encrypted).

        Args:
            payload: The payload.
            max_bytes: A tighter bound than `max_decompressed_bytes` on what a compressed
                payload may inflate to (the codec server's budget for one request).

        Raises:
            MalformedPayloadError: too short, or an unknown cipher or compression.
            PayloadTooLargeError: it would inflate past the bound.
            CodecError: an unknown key or a failed authentication.
        """
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        raw_id = payload.metadata.get("encryption-key-id", b"")
        key_id = raw_id.decode("utf-8", "replace")
        cipher = payload.metadata.get("encryption-cipher", b"")
        if cipher != CIPHER:
            raise MalformedPayloadError(
                f"encrypted payload uses cipher {cipher!r}, expected {CIPHER!r}"
            )
        compression = payload.metadata.get("compression", b"")
        if compression not in (b"", ZLIB):
            raise MalformedPayloadError(
                f"encrypted payload uses unknown compression {compression!r}"
            )
        if len(payload.data) < _NONCE_BYTES + _TAG_BYTES:
            raise MalformedPayloadError(
                f"encrypted payload (key {key_id!r}) is truncated: {len(payload.data)} bytes, "
                f"at least {_NONCE_BYTES + _TAG_BYTES} (nonce and tag) expected"
            )
        key = self.keys.key(key_id)
        if key is None:
            raise CodecError(f"no key with id {key_id!r} to decrypt this payload (rotated out?)")
        nonce, sealed = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
        try:
            plain = AESGCM(key).decrypt(nonce, sealed, _associated_data(raw_id, compression))
        except InvalidTag:
            raise CodecError(
                f"encrypted payload (key {key_id!r}) failed authentication: "
                "it was altered, or the key with that id is not the one that wrote it"
            ) from None
        if compression:
            limit = self.max_decompressed_bytes
            plain = _inflate(plain, limit if max_bytes is None else min(limit, max_bytes), key_id)
        return Payload.FromString(plain)


def _inflate(compressed: bytes, limit: int, key_id: str) -> bytes:
    # Never more than `limit` + 1 bytes in memory, however far the stream would inflate.
    inflater = zlib.decompressobj()
    try:
        plain = inflater.decompress(compressed, limit + 1)
    except zlib.error as error:
        raise CodecError(f"cannot decompress payload (key {key_id!r}): {error}") from None
    if len(plain) > limit:
        raise PayloadTooLargeError(f"payload (key {key_id!r}) inflates to more than {limit} bytes")
    if not inflater.eof or inflater.unused_data:
        raise CodecError(f"cannot decompress payload (key {key_id!r}): incomplete or trailing data")
    return plain


def data_converter(codec: PayloadCodec) -> DataConverter:
    """The project's pydantic data converter with `codec` applied to every payload."""
    return dataclasses.replace(pydantic_data_converter, payload_codec=codec)


def codec_from_env() -> EncryptionCodec | None:
    """The encryption codec the environment configures, or None if no keys are set.

    Raises:
        CodecKeyError: keys are configured but unusable (encryption never silently off).
    """
    keys = key_provider_from_env()
    if keys is None:
        return None
    compress = os.environ.get(COMPRESS_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return EncryptionCodec(keys, compress=compress)


def data_converter_from_env() -> DataConverter | None:
    """A data converter encrypting with the environment's keys, or None if none are set.

    Raises:
        CodecKeyError: keys are configured but unusable (encryption never silently off).
    """
    codec = codec_from_env()
    return None if codec is None else data_converter(codec)
