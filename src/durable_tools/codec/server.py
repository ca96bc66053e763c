"""The codec server app (needs the `inbox` extra: Starlette and uvicorn)."""

from ._server import (
    INBOX_SESSION_COOKIE,
    MAX_BODY_BYTES,
    MAX_DECODED_BYTES,
    MAX_JSON_ITEMS,
    CodecServerConfig,
    create_codec_app,
)

__all__ = [
    "INBOX_SESSION_COOKIE",
    "MAX_BODY_BYTES",
    "MAX_DECODED_BYTES",
    "MAX_JSON_ITEMS",
    "CodecServerConfig",
    "create_codec_app",
]
