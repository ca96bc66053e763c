"""Encrypted payloads: an AES-256-GCM payload codec with rotating keys, and a codec server.

`EncryptionCodec(KeyRing(...))` encrypts every payload a client or worker sends to Temporal;
`data_converter(codec)` is the project's pydantic converter with it applied;
`data_converter_from_env()` builds one from `DURABLE_TOOLS_CODEC_KEYS`,
`DURABLE_TOOLS_CODEC_KEY_FILE` or `DURABLE_TOOLS_CODEC_KEY_PROVIDER` (None when none is
set). The codec server (`durable-tools codec-server`, `durable_tools.codec.server`) lets
the Temporal Web UI and CLI show decrypted payloads to authenticated people.
"""

from ._codec import (
    COMPRESS_ENV,
    MAX_DECOMPRESSED_BYTES,
    CodecError,
    EncryptionCodec,
    MalformedPayloadError,
    PayloadTooLargeError,
    codec_from_env,
    data_converter,
    data_converter_from_env,
)
from ._keys import (
    KEY_FILE_ENV,
    KEY_PROVIDER_ENV,
    KEYS_ENV,
    CodecKeyError,
    KeyProvider,
    KeyRing,
    key_provider_from_env,
)

__all__ = [
    "COMPRESS_ENV",
    "KEYS_ENV",
    "KEY_FILE_ENV",
    "KEY_PROVIDER_ENV",
    "MAX_DECOMPRESSED_BYTES",
    "CodecError",
    "CodecKeyError",
    "EncryptionCodec",
    "KeyProvider",
    "KeyRing",
    "MalformedPayloadError",
    "PayloadTooLargeError",
    "codec_from_env",
    "data_converter",
    "data_converter_from_env",
    "key_provider_from_env",
]
