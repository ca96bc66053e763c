"""Scrubbing secret values out of text and data, in the forms they usually leak in.

A secret rarely leaks verbatim only: a tool that echoes a request URL leaks it
URL-encoded, one that returns `repr(config)` leaks it with Python escapes, a JSON body
that quotes it leaks it JSON-escaped, a Basic auth header leaks it in base64. `scrub`
replaces each of these forms of every secret by `[redacted]`:

- the raw value;
- `repr()` and `ascii()` escapes (the text between the quotes);
- `json.dumps` escapes, with and without `ensure_ascii`, also of the forms above (a
  `repr` quoted in a JSON body);
- URL encoding: `quote` (with and without `/` kept), `quote_plus`, with upper- or
  lower-case hex digits;
- base64 (standard and URL-safe alphabets), for secrets of at least
  `MIN_BASE64_LENGTH` characters, at each of the three byte alignments, so the secret is
  also found inside a longer encoded value such as `base64("user:" + secret)`. Only the
  characters that depend on the secret alone are matched; the one or two characters at
  either end that mix in neighbouring bytes may remain.

Not covered: other encodings (hex, HTML entities, hashes), and a secret split or
transformed by the tool. Values shorter than `MIN_SECRET_LENGTH` are not scrubbed: they
would redact ordinary words, so a worker should not rely on them staying secret.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = [
    "MIN_BASE64_LENGTH",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "scrub",
    "scrub_value",
    "secret_variants",
]

REDACTED = "[redacted]"
"""What a scrubbed secret reads as."""

MIN_SECRET_LENGTH = 4
"""Shorter values are never scrubbed (they would match ordinary text)."""

MIN_BASE64_LENGTH = 8
"""Shorter secrets are not searched for in base64 (a short fragment matches at random)."""

_HEX_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def _base64_fragments(secret: bytes) -> set[str]:
    fragments = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret).decode("ascii")
        # Base64 character i encodes bits [6i, 6i + 6); keep those within the secret's bits.
        start = -(-8 * shift // 6)
        end = 8 * (shift + len(secret)) // 6
        fragment = encoded[start:end]
        fragments.add(fragment)
        fragments.add(fragment.translate(str.maketrans("+/", "-_")))
    return fragments


def secret_variants(secret: str) -> frozenset[str]:
    """Every form of `secret` that `scrub` looks for (empty when it is too short)."""
    if len(secret) < MIN_SECRET_LENGTH:
        return frozenset()
    variants = {
        secret,
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }
    # One level of nesting: any of these forms inside a JSON string (a repr in a JSON body).
    variants |= {
        json.dumps(v, ensure_ascii=ascii_only)[1:-1]
        for v in list(variants)
        for ascii_only in (True, False)
    }
    for encoded in (quote(secret, safe=""), quote(secret), quote_plus(secret)):
        variants.add(encoded)
        variants.add(_HEX_ESCAPE.sub(lambda m: m.group().lower(), encoded))
    if len(secret) >= MIN_BASE64_LENGTH:
        variants |= _base64_fragments(secret.encode("utf-8", "surrogatepass"))
    return frozenset(v for v in variants if v)


@functools.lru_cache(maxsize=256)
def _pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    variants: set[str] = set()
    for secret in secrets:
        variants |= secret_variants(secret)
    if not variants:
        return None
    # Longest first, so a form that contains another is replaced whole.
    return re.compile("|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True)))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every known form of every secret replaced by `[redacted]`.

    Args:
        text: Any text bound for history, logs, events or a person.
        secrets: The secret values (raw); their encoded forms are derived here.
    """
    pattern = _pattern(frozenset(secrets))
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def scrub_value(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings) with secrets scrubbed
    from every string in it, keys included. Other values pass through as they are."""
    found = frozenset(secrets)
    if _pattern(found) is None:
        return value

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return scrub(item, found)
        if isinstance(item, Mapping):
            return {walk(k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(x) for x in item]
        return item

    return walk(value)
