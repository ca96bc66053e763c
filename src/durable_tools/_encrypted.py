"""Runs whose payloads this client cannot read: how to tell, and what to tell the operator.

Shared by every reader of runs (the CLI's `pending`/`show`, the watcher, the inbox); it
imports nothing of the package, so any of them can use it without joining an import cycle.
"""

from __future__ import annotations

__all__ = ["ENCRYPTED_NOTE", "PayloadsEncrypted", "is_encrypted_payload_error"]

ENCRYPTED_NOTE = (
    "its payloads are encrypted and this machine has no keys to read them: set "
    "DURABLE_TOOLS_CODEC_KEYS (or DURABLE_TOOLS_CODEC_KEY_FILE) as the workers have it "
    "(see docs/encryption.md)"
)
"""What an operator without the codec keys is told about an encrypted run."""


class PayloadsEncrypted(Exception):
    """The run's payloads are encrypted and this client has no codec to read them."""


def is_encrypted_payload_error(error: BaseException) -> bool:
    """Whether `error` is the SDK's refusal of a payload encoding it has no codec for
    (`KeyError: 'Unknown payload encoding binary/encrypted'`)."""
    return isinstance(error, KeyError) and "payload encoding" in str(error)
