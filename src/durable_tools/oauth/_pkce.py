"""PKCE (RFC 7636, S256) and the `state` parameter."""

from __future__ import annotations

import base64
import hashlib
import secrets

__all__ = ["code_challenge", "new_code_verifier", "new_state"]


def new_code_verifier(nbytes: int = 64) -> str:
    """A random PKCE code verifier: 86 URL-safe characters for the default 64 bytes.

    Args:
        nbytes: Random bytes; 32..96 keeps the verifier within RFC 7636's 43..128 characters.
    """
    if not 32 <= nbytes <= 96:
        raise ValueError("nbytes must be within 32..96 (a verifier of 43..128 characters)")
    return secrets.token_urlsafe(nbytes)


def code_challenge(verifier: str) -> str:
    """The S256 challenge of a verifier: base64url(sha256(verifier)) without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_state() -> str:
    """A random, unguessable `state` value (256 bits)."""
    return secrets.token_urlsafe(32)
