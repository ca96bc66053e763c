"""Scrubbing secret values out of text and data, in the forms they usually leak in.

A secret rarely leaks verbatim only: a tool that echoes a request URL leaks it
URL-encoded, one that returns `repr(config)` leaks it with Python escapes, a JSON body
that quotes it leaks it JSON-escaped, a Basic auth header leaks it in base64, an e-mail
or a PEM file wraps that base64 over several lines. `scrub` replaces each of these forms
of every secret by `[redacted]`:

- the raw value, also broken over lines (a terminal or `textwrap` cutting a long word,
  also with the line break JSON-escaped);
- escapes: `repr()`, `ascii()`, `json.dumps` (with and without `ensure_ascii`, and
  nested: a `repr` quoted in a JSON body), JSON `\\uXXXX` or `\\/` escapes of any
  characters, the UTF-8 bytes as `\\xHH` (a `bytes` repr), up to 8 backslashes deep;
- URL encoding of any or every byte, once, twice or three times (`quote(quote(s))`),
  `+` for a space, hex digits in any mix of cases; quoted-printable `=HH`;
- HTML character references (`&#47;`, `&#x2F;`, `&amp;`, `&quot;`, ...);
- hex of the UTF-8 bytes, lower- or upper-case;
- base64 (standard and URL-safe alphabets, padded or not), for secrets of at least
  `MIN_BASE64_LENGTH` characters, at each of the three byte alignments, so the secret is
  also found inside a longer encoded value such as `base64("user:" + secret)`, with a
  line break (`\\n`, `\\r\\n`, or JSON-escaped) allowed anywhere, as MIME
  (`base64.encodebytes`) and PEM write it. Only the characters that depend on the secret
  alone are matched; the one or two characters at either end that mix in neighbouring
  bytes may remain.

Not covered: other encodings (base32, gzip, hashes, a hexdump with offsets), encodings
nested other than as above (base64 or hex of an escaped form, HTML references of a JSON
escape), and a secret split or transformed by the tool. Values shorter than
`MIN_SECRET_LENGTH` are not scrubbed: they would redact ordinary words, so a worker
should not rely on them staying secret.

Each secret has its own compiled pattern (cached), and a scan is linear in the text's
length (see `_scrub_forms`): 2 MB in some 10 to 30 ms per secret here.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

from ._scrub_forms import ANCHOR_UNITS, Spelling, encoded, wrapped_base64

__all__ = [
    "MIN_BASE64_LENGTH",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "display_url",
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
    """The literal forms of `secret` that `scrub` looks for (empty when it is too short).

    `scrub` also matches patterns that these strings cannot list (see the module's
    docstring); these cover the standard forms exactly, whatever the patterns make of
    unusual characters such as a run of backslashes.
    """
    if len(secret) < MIN_SECRET_LENGTH:
        return frozenset()
    utf8 = secret.encode("utf-8", "surrogatepass")
    variants = {
        secret,
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(utf8)[2:-1],
    }
    # One level of nesting: any of these forms inside a JSON string (a repr in a JSON body).
    variants |= {
        json.dumps(v, ensure_ascii=ascii_only)[1:-1]
        for v in list(variants)
        for ascii_only in (True, False)
    }
    for quoted in (quote(secret, safe=""), quote(secret), quote_plus(secret)):
        variants.add(quoted)
        variants.add(_HEX_ESCAPE.sub(lambda m: m.group().lower(), quoted))
    variants |= {utf8.hex(), utf8.hex().upper()}
    return frozenset(v for v in variants if v)


@dataclass(frozen=True)
class _Matcher:
    """How one secret is found: its literal forms, and the anchors of its spellings."""

    pattern: re.Pattern[str]
    """Every alternative (a literal form, or the anchor of a spelling) ends with an empty
    group, by which a match tells which alternative it is."""
    spelling_of_group: tuple[int, ...]
    """Per group number, the index of its spelling, or -1 for a literal form."""
    spellings: tuple[Spelling, ...]

    def end(self, found: re.Match[str]) -> int | None:
        """Where the secret found at `found` ends, or None when only an anchor matched."""
        which = self.spelling_of_group[found.lastindex or 0]
        if which < 0:  # a literal form: the whole secret
            return found.end()
        end = self.spellings[which].end(found.string, found.end(), ANCHOR_UNITS)
        # The anchors before this one did not match here; the ones after it may.
        for spelling in self.spellings[which + 1 :] if end is None else ():
            end = spelling.end(found.string, found.start())
            if end is not None:
                break
        return end


@functools.lru_cache(maxsize=256)
def _matcher(secret: str) -> _Matcher | None:
    variants = secret_variants(secret)
    if not variants:
        return None
    spellings = [encoded(secret)]
    if len(secret) >= MIN_BASE64_LENGTH:
        fragments = _base64_fragments(secret.encode("utf-8", "surrogatepass"))
        spellings += [wrapped_base64(f) for f in sorted(fragments, key=len, reverse=True)]
    # Longest first, so a form that contains another is replaced whole. Every alternative
    # starts with a literal character (a group around one would hide it), which lets `re`
    # skip ahead to where one may match.
    alternatives = [(re.escape(v), -1) for v in sorted(variants, key=len, reverse=True)]
    alternatives += [
        (anchor, index) for index, spelling in enumerate(spellings) for anchor in spelling.anchor()
    ]
    pattern = re.compile("|".join(source + "()" for source, _ in alternatives))
    return _Matcher(pattern, (-1, *(index for _, index in alternatives)), tuple(spellings))


def _matchers(secrets: Iterable[str]) -> list[_Matcher]:
    # Longest secret first: one that contains another is replaced whole.
    found = sorted(set(secrets), key=lambda s: (-len(s), s))
    return [m for m in map(_matcher, found) if m is not None]


def _redact(text: str, matcher: _Matcher) -> str:
    pieces: list[str] = []
    kept = position = 0
    while (found := matcher.pattern.search(text, position)) is not None:
        end = matcher.end(found)
        if end is None:  # an anchor without the rest of the secret
            position = found.start() + 1
            continue
        pieces += [text[kept : found.start()], REDACTED]
        kept = position = end
    if not pieces:
        return text
    pieces.append(text[kept:])
    return "".join(pieces)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every known form of every secret replaced by `[redacted]`.

    Args:
        text: Any text bound for history, logs, events or a person.
        secrets: The secret values (raw); their encoded forms are derived here.
    """
    for matcher in _matchers(secrets) if text else ():
        text = _redact(text, matcher)
    return text


def scrub_value(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings) with secrets scrubbed
    from every string in it, keys included. Other values pass through as they are."""
    matchers = _matchers(secrets)
    if not matchers:
        return value

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            for matcher in matchers:
                item = _redact(item, matcher)
            return item
        if isinstance(item, Mapping):
            return {walk(k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(x) for x in item]
        return item

    return walk(value)


def display_url(url: str, *, query: bool = True) -> str:
    """`url` as it may be shown (errors, logs, history): without `user:password@`, which is
    a credential, and without the query when `query` is False (it may hold a key)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unparsable URL: drop everything up to the last `@`
        scheme, sep, rest = url.rpartition("://")
        return f"{scheme}{sep}{rest.rpartition('@')[2]}"
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=netloc, query=parts.query if query else ""))
