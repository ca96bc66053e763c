"""`scrub` finds a secret in the forms it leaks in, and leaves other text alone."""

from __future__ import annotations

import base64
import html
import json
import quopri
import re
import textwrap
import time
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest

from durable_tools.tools._scrub import REDACTED, display_url, scrub, scrub_value, secret_variants

# Characters that every encoding below changes: '/', '+', ' ', quotes, a backslash, é.
SECRET = "sk-Live/9+Q \"x'\\é-0c4f9a71"
# Over 57 bytes: MIME base64 (76 characters a line) wraps it.
LONG_SECRET = SECRET + "-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop0123456789-🔑-5e7d"


def every_byte(secret: str, case: str) -> str:
    """Every UTF-8 byte percent-encoded, hex digits upper, lower or alternating."""
    hexes = [f"{b:02X}" if case == "upper" else f"{b:02x}" for b in secret.encode()]
    if case == "mixed":
        hexes = [h.upper() if i % 2 else h for i, h in enumerate(hexes)]
    return "".join("%" + h for h in hexes)


def b64(data: str) -> str:
    return base64.b64encode(data.encode()).decode()


PREFIXES = {"basic-auth": "user:", "basic-auth-shift-2": "me:", "basic-auth-shift-1": "u:"}
FORMS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "repr": repr,
    "ascii": ascii,
    "json": json.dumps,
    "json-utf8": lambda s: json.dumps(s, ensure_ascii=False),
    "json-in-json": lambda s: json.dumps(json.dumps(s)),
    "json-in-json-in-json": lambda s: json.dumps(json.dumps(json.dumps(s))),
    "json-escaped-slashes": lambda s: json.dumps(s).replace("/", "\\/"),  # PHP
    "json-u-every-char": lambda s: "".join(
        f"\\u{ord(c):04X}" if ord(c) < 0x10000 else json.dumps(c)[1:-1] for c in s
    ),
    "bytes-repr": lambda s: repr(s.encode()),
    "quote": quote,
    "quote-all": lambda s: quote(s, safe=""),
    "quote_plus": quote_plus,
    "quote-lower-hex": lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(s)),
    "double-quote": lambda s: quote(quote(s)),
    "double-quote-all": lambda s: quote(quote(s, safe=""), safe=""),
    "double-quote_plus": lambda s: quote_plus(quote_plus(s)),
    "triple-quote": lambda s: quote(quote(quote(s))),
    "every-byte-upper": lambda s: every_byte(s, "upper"),
    "every-byte-lower": lambda s: every_byte(s, "lower"),
    "every-byte-mixed-case": lambda s: every_byte(s, "mixed"),
    "every-byte-twice": lambda s: quote(every_byte(s, "mixed"), safe=""),
    "hex": lambda s: s.encode().hex(),
    "hex-upper": lambda s: s.encode().hex().upper(),
    "html-escape": html.escape,
    "html-decimal": lambda s: "".join(f"&#{ord(c)};" for c in s),
    "html-hex": lambda s: "".join(f"&#x{ord(c):x};" for c in s),
    "quoted-printable": lambda s: quopri.encodestring(s.encode()).decode(),
    "wrapped-lines": lambda s: "\n".join(textwrap.wrap(s, 9, break_on_hyphens=False)),
    "wrapped-crlf": lambda s: s[:7] + "\r\n" + s[7:],
    "wrapped-in-json": lambda s: json.dumps("\n".join(textwrap.wrap(s, 9))),
    "base64": b64,
    "base64-urlsafe": lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    "base64-urlsafe-unpadded": lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
    "base64-mime": lambda s: base64.encodebytes(s.encode()).decode(),
    "base64-mime-crlf": lambda s: base64.encodebytes(s.encode()).decode().replace("\n", "\r\n"),
    "base64-mime-in-json": lambda s: json.dumps(base64.encodebytes(s.encode()).decode()),
    "base64-pem-64": lambda s: "\n".join(textwrap.wrap(b64(s), 64)),
    "base64-yaml-indented": lambda s: "key: |\n    " + "\n    ".join(textwrap.wrap(b64(s), 40)),
    **{
        form: lambda s, prefix=prefix: b64(f"{prefix}{s}")  # type: ignore[misc]
        for form, prefix in PREFIXES.items()
    },
    **{
        f"mime-{form}": lambda s, prefix=prefix: base64.encodebytes(  # type: ignore[misc]
            f"{prefix}{s}".encode()
        ).decode()
        for form, prefix in PREFIXES.items()
    },
}


@pytest.mark.parametrize("secret", [SECRET, LONG_SECRET], ids=["short", "long"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_of_a_secret_is_scrubbed(form: str, secret: str) -> None:
    leaked = f"before {FORMS[form](secret)} after"
    scrubbed = scrub(leaked, [secret])
    assert scrubbed.startswith("before ") and scrubbed.endswith(" after")
    inner = scrubbed.removeprefix("before ").removesuffix(" after")
    if "base64" not in form and "basic" not in form:
        # Whole: the quotes of a repr or JSON string around it, nothing else.
        assert inner.replace(REDACTED, "").strip("b'\"\\") == "", inner
        return
    # What stays: the prefix's own characters, at most 2 on either side of the secret
    # that mix in neighbouring bits, the padding and the line breaks.
    assert REDACTED in inner
    rest = re.sub(r"\s|\\n|key: \|", "", inner.replace(REDACTED, "")).strip('"')
    prefix_chars = len(next((p for f, p in PREFIXES.items() if f in form), "")) * 4 // 3
    assert len(rest) <= prefix_chars + 6, rest


def test_other_text_and_short_or_empty_values_are_left_alone() -> None:
    text = "GET /users ok: 200 rows, page 1 of 3"
    assert scrub(text, [SECRET]) == text
    assert scrub(text, ["", "ok", "abc"]) == text  # too short to scrub: would hit words
    assert secret_variants("") == frozenset() and secret_variants("abc") == frozenset()
    assert scrub(text, []) == text
    # Encoded text that is not the secret, and keys that share its start, stay.
    noisy = (
        "a%20b %41%42 \\u00e9 &amp; &#47; =3D 6f6b "
        + "sk-Live/9+Q \"x'\\é-0c4f9a72 "
        + quote("sk-Live/9+Q \"x'\\é-0c4f9a7")
        + " "
        + base64.encodebytes(b"sk-Live/9+Q \"x'\\\xc3\xa9-0c4f9a7").decode()
    )
    assert scrub(noisy, [SECRET]) == noisy


def test_several_secrets_and_overlapping_forms() -> None:
    other = "tok_ABCDEFGH12345678"
    text = f"key={quote_plus(SECRET)}&token={other}&again={SECRET}"
    assert scrub(text, [SECRET, other]) == f"key={REDACTED}&token={REDACTED}&again={REDACTED}"
    # A secret inside a longer one: the longer one is replaced whole.
    assert scrub(f"x {other}-more y", [other, f"{other}-more"]) == f"x {REDACTED} y"


def test_encodings_mixed_inside_one_secret_are_scrubbed() -> None:
    # Each character in another form: percent, JSON escape, HTML reference, raw.
    mixed = "sk%2dLive\\/9%2BQ%20&quot;x&#39;\\\\\\u00E9-0c4f%39a71"
    assert scrub(f"<{mixed}>", [SECRET]) == f"<{REDACTED}>"


def test_scrub_value_walks_json_like_data_keys_included() -> None:
    value = {
        "next": f"https://api.example/items?page=2&api_key={quote(SECRET, safe='')}",
        SECRET: [1, None, True, (SECRET, 2.5)],
        "nested": {"repr": repr({"key": SECRET})},
        "cert": base64.encodebytes(LONG_SECRET.encode()).decode(),
    }
    scrubbed = scrub_value(value, [SECRET, LONG_SECRET])
    assert json.dumps(scrubbed).count("0c4f9a71") == 0
    assert scrubbed["next"] == f"https://api.example/items?page=2&api_key={REDACTED}"
    assert scrubbed[REDACTED] == [1, None, True, [REDACTED, 2.5]]
    assert REDACTED in scrubbed["cert"] and len(scrubbed["cert"]) < 20
    assert scrub_value(value, []) is value


PERIODIC = "e" * 40 + "X"  # every position in a run of `e` starts a near miss
OTHERS = ["tok_ABCDEFGH12345678", PERIODIC]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # Near misses of every spelling, one after the other: each is followed as far as
        # it goes, which must stay proportional to the text.
        ((SECRET[:-1] + "X") * 40_000, SECRET),
        ((LONG_SECRET[:-1] + "X") * 10_000, LONG_SECRET),
        ((every_byte(SECRET[:-1], "mixed") + "%58") * 12_000, SECRET),
        ((b64(LONG_SECRET)[:-8] + "\n") * 8_000, LONG_SECRET),
        (("\\" * 9 + "%25" * 3 + "&#" + "=\n") * 60_000, SECRET),
        # The worst case: a near miss at every position, each followed 40 characters.
        ("e" * 200_000, PERIODIC),
    ],
    ids=["raw", "long-raw", "percent", "base64", "escape-starts", "periodic"],
)
def test_scrubbing_stays_linear_whatever_the_text_holds(text: str, secret: str) -> None:
    secrets = [secret, *OTHERS]
    scrub("", secrets)  # compiled (once per worker)
    start = time.perf_counter()
    assert scrub(text, secrets) == text
    # 0.05 to 3 s here; a scan that is quadratic in the text would take hours.
    assert time.perf_counter() - start < 60


@pytest.mark.parametrize(
    ("url", "shown", "without_query"),
    [
        (
            "https://u:pw@h.example:8/x?api_key=k#f",
            "https://h.example:8/x?api_key=k#f",
            "https://h.example:8/x#f",
        ),
        ("https://u:pw@h.example/x?k=1", "https://h.example/x?k=1", "https://h.example/x"),
        ("http://a@b@h.example/x", "http://h.example/x", None),  # the last @ ends userinfo
        ("https://h.example/x", "https://h.example/x", None),
        ("http://u:pw@[::1/x", "http://[::1/x", None),  # unparsable: still no userinfo
    ],
)
def test_display_url_never_shows_userinfo(url: str, shown: str, without_query: str | None) -> None:
    assert display_url(url) == shown
    assert display_url(url, query=False) == (without_query or shown.split("?")[0])
