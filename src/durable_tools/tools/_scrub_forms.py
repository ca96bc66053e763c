"""Matching the encoded forms of a secret that `scrub` cannot list as strings.

Some encodings have too many spellings to list: every byte or only some percent-encoded,
hex digits in either case, JSON `\\u` escapes for some characters only, HTML entities,
base64 wrapped at any column. A `Spelling` matches one of them as a sequence of units,
one per character, with an optional line break between two units:

- `encoded`: each character of the secret in any of its forms (`character_forms`), so
  that any mix matches (`s%6B-live` as well as `%73%6b%2D...`), a raw line break allowed
  between two characters (a terminal or `textwrap` breaking a long word);
- `wrapped_base64`: a base64 fragment, a line break allowed between any two of its
  characters (MIME and PEM wrap at 64 or 76 columns, with `\\n` or `\\r\\n`).

A whole secret as one regular expression would take seconds to compile for a long token
(an OAuth access token can be 2,000 characters, with some 15 forms each). So a search
runs on an anchor instead, the first `ANCHOR_UNITS` units of each spelling (compiled in
milliseconds), and `Spelling.end` follows the rest of the secret from where an anchor
matched, one unit at a time. Each unit's forms are an atomic group and each line break is
matched possessively: nothing is tried twice, so following a candidate costs at most one
step per character of the secret, and a scan is linear in the text's length.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["ANCHOR_UNITS", "Spelling", "character_forms", "encoded", "wrapped_base64"]

ANCHOR_UNITS = 32
"""Units of a spelling its anchor matches: the whole of most API keys and passwords (so
that `re` alone, in C, decides where they are), and enough of a longer token that
ordinary text rarely matches. More would make a long token's pattern slow to compile."""

_MAX_BACKSLASHES = 8
"""Escapes quoted up to three times (`\\u00e9` in JSON in JSON in a `repr`)."""

_SHORT_ESCAPES = MappingProxyType(
    {
        '"': '"',
        "'": "'",
        "/": "/",  # JSON may escape a slash (PHP's json_encode does)
        "\n": "n",
        "\r": "r",
        "\t": "t",
        "\b": "b",
        "\f": "f",
    }
)
_ENTITIES = MappingProxyType(
    {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos", "\xa0": "nbsp"}
)

_FORM_STARTS = frozenset("\\%=&")
"""The characters that begin a form of another character (a space is also written `+`)."""

_LINE_BREAK = r"(?:=?\r?\n|\\r\\n|\\n)?+"
"""Between two characters of a secret: a raw line break, a quoted-printable soft one, or a
JSON-escaped one (not before a backslash, which may begin the next character's form)."""

_BASE64_BREAK = r"(?:\r?\n[ \t]{0,16}|\\r\\n|\\n)?+"
"""Between two base64 characters: a raw line break (with the indentation YAML or a
pretty-printer adds), or one JSON-escaped. No base64 character is a backslash or a
newline, so consuming it whenever it is there never loses a match."""


def _hex(value: int, width: int) -> str:
    """`value` in hex, each letter digit matching either case: `[eE]9`."""
    return "".join(f"[{d.lower()}{d}]" if d.isalpha() else d for d in format(value, f"0{width}X"))


def _backslash(body: str) -> str:
    # One backslash, then up to seven more (an escape quoted again by JSON or repr),
    # possessively: no escape body starts with a backslash, so none is given back.
    return rf"\\(?:\\){{0,{_MAX_BACKSLASHES - 1}}}+" + body


def character_forms(char: str) -> list[str]:
    """Regex alternatives for one character, each starting with a literal character.

    A backslash escape (`\\xe9`, `\\u00e9`, `\\U000000e9`, a surrogate pair, the UTF-8
    bytes as `\\xc3\\xa9`, `\\"` or `\\/`) with up to `_MAX_BACKSLASHES` backslashes;
    each UTF-8 byte percent-encoded once, twice or three times (`%2F`, `%252f`), or
    quoted-printable (`=2F`); `+` for a space; an HTML character reference (`&#47;`,
    `&#x2f;`, `&quot;`); last, the character itself.
    """
    code = ord(char)
    utf8 = char.encode("utf-8", "surrogatepass")
    escapes = []
    if code < 0x100:
        escapes.append("x" + _hex(code, 2))
    if code < 0x10000:
        escapes.append("u" + _hex(code, 4))
    else:
        high, low = divmod(code - 0x10000, 0x400)
        escapes.append("u" + _hex(0xD800 + high, 4) + _backslash("u" + _hex(0xDC00 + low, 4)))
    escapes.append("U" + _hex(code, 8))
    if len(utf8) > 1:
        escapes.append("x" + _backslash("x").join(_hex(b, 2) for b in utf8))
    if char in _SHORT_ESCAPES:
        escapes.append(re.escape(_SHORT_ESCAPES[char]))
    forms = [_backslash("(?:" + "|".join(escapes) + ")")]
    if char == "\\":
        # Escaped once, twice, three times: 2, 4, 8 backslashes (and not a run of any
        # length, which would take the backslash of the next character's escape).
        forms += [r"\\" * 8, r"\\" * 4, r"\\" * 2]
    forms.append("".join("%(?:25){0,2}" + _hex(b, 2) for b in utf8))
    forms.append("".join("=" + _hex(b, 2) for b in utf8))
    if char == " ":
        forms += [r"\+", "%(?:25){0,2}2[bB]"]
    forms.append(f"&#(?:0{{0,8}}{code}|[xX]0{{0,8}}{_hex(code, 1)});")
    if char in _ENTITIES:
        forms.append(f"&{_ENTITIES[char]};")
    # Last: in an atomic group the first form that fits is kept, and the character
    # itself begins some of the forms above (`%` begins `%25`, `&` begins `&amp;`).
    forms.append(re.escape(char))
    return forms


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source)


def _common_length(text: str, pos: int, plain: str, start: int, most: int) -> int:
    """How many characters of `plain[start:start + most]` `text` has as is at `pos`."""
    if text.startswith(plain[start : start + most], pos):
        return most  # the usual case when the secret is there
    if not text.startswith(plain[start], pos):
        return 0  # the usual case when it is not
    low, high = 1, most - 1
    while low < high:  # a binary search: each step is one comparison in C
        middle = (low + high + 1) // 2
        if text.startswith(plain[start : start + middle], pos):
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class Spelling:
    """One way of writing a secret: a unit per character, a break allowed between two."""

    plain: str
    """The characters the units stand for, as they read unencoded."""
    units: tuple[str, ...]
    """Each unit's regex: an atomic group of its forms (or a literal)."""
    first: tuple[str, ...]
    """The first unit's forms, each starting with a literal character."""
    breaks: tuple[str, ...]
    """Before units[i + 1]: what may separate it from units[i] ('' for nothing)."""
    literal_runs: tuple[int, ...]
    """From unit i, how many units match only their character as is: a run of them is
    compared in one step."""
    starts: frozenset[str]
    """The characters the spelling may start with."""

    def anchor(self) -> list[str]:
        """Regex alternatives for the spelling's first `ANCHOR_UNITS` units, each starting
        with a literal character (which lets `re` skip to where one may match)."""
        count = min(ANCHOR_UNITS, len(self.units))
        rest = "".join(self.breaks[i - 1] + self.units[i] for i in range(1, count))
        return [form + rest for form in self.first]

    def end(self, text: str, start: int, done: int = 0) -> int | None:
        """Where the spelling ends when the secret is written so at `start`, else None.

        The same as matching the whole spelling as one regular expression at `start`.

        Args:
            text: The text.
            start: Where the spelling starts, or where its first `done` units end.
            done: How many units were matched already (by the anchor).
        """
        if not done and not text.startswith(tuple(self.starts), start):
            return None
        index, pos = min(done, len(self.units)), start
        while index < len(self.units):
            if index and self.breaks[index - 1]:
                gap = _compiled(self.breaks[index - 1]).match(text, pos)
                pos = gap.end() if gap is not None else pos  # a break is optional
            run = self.literal_runs[index]
            same = _common_length(text, pos, self.plain, index, run) if run else 0
            if same:
                index, pos = index + same, pos + same
                continue
            found = _compiled(self.units[index]).match(text, pos)
            if found is None:
                return None
            index, pos = index + 1, found.end()
        return pos


def _spelling(
    plain: str, units: list[str], first: list[str], breaks: list[str], starts: set[str]
) -> Spelling:
    runs = [0] * (len(units) + 1)
    for index in reversed(range(len(units))):
        # A unit matches only its character when no other form begins with that character.
        alone = units[index] == re.escape(plain[index]) or plain[index] not in _FORM_STARTS
        runs[index] = runs[index + 1] + 1 if alone else 0
    return Spelling(
        plain, tuple(units), tuple(first), tuple(breaks), tuple(runs[:-1]), frozenset(starts)
    )


def encoded(secret: str) -> Spelling:
    """`secret` with each character in any of its forms, raw line breaks between them."""
    forms = [character_forms(char) for char in secret]
    return _spelling(
        secret,
        ["(?>" + "|".join(f) + ")" for f in forms],
        forms[0],
        ["" if char in "\r\n\\" else _LINE_BREAK for char in secret[1:]],
        {secret[0], "+", *_FORM_STARTS},
    )


def wrapped_base64(fragment: str) -> Spelling:
    """A base64 `fragment` with a line break allowed between any two of its characters."""
    units = [re.escape(char) for char in fragment]
    breaks = [_BASE64_BREAK] * (len(fragment) - 1)
    return _spelling(fragment, units, units[:1], breaks, {fragment[0]})
