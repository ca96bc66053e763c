"""`scrub` finds a secret in the forms it leaks in, and leaves other text alone."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from durable_tools.tools._scrub import REDACTED, scrub, scrub_value, secret_variants

# Characters that every encoding below changes: '/', '+', ' ', quotes, a backslash, é.
SECRET = "sk-Live/9+Q \"x'\\é-0c4f9a71"

PREFIXES = {"basic-auth": "user:", "basic-auth-shift-2": "me:", "basic-auth-shift-1": "u:"}
FORMS = {
    "raw": SECRET,
    "repr": repr(SECRET),
    "ascii": ascii(SECRET),
    "json": json.dumps(SECRET),
    "json-utf8": json.dumps(SECRET, ensure_ascii=False),
    "quote": quote(SECRET),
    "quote-all": quote(SECRET, safe=""),
    "quote_plus": quote_plus(SECRET),
    "quote-lower-hex": re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(SECRET)),
    "base64": base64.b64encode(SECRET.encode()).decode(),
    "base64-urlsafe": base64.urlsafe_b64encode(SECRET.encode()).decode(),
    **{
        form: base64.b64encode(f"{prefix}{SECRET}".encode()).decode()
        for form, prefix in PREFIXES.items()
    },
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_of_a_secret_is_scrubbed(form: str) -> None:
    leaked = f"before {FORMS[form]} after"
    scrubbed = scrub(leaked, [SECRET])
    assert REDACTED in scrubbed
    assert scrubbed.startswith("before ") and scrubbed.endswith(" after")
    # Nothing of the secret's distinctive tail survives in any form.
    assert "0c4f9a71" not in scrubbed
    if form.startswith(("base64", "basic")):
        # What stays: the prefix's own characters, and at most 2 on either side of the
        # secret that mix in neighbouring bits (and the padding).
        inner = scrubbed.removeprefix("before ").removesuffix(" after")
        prefix_chars = len(PREFIXES.get(form, "")) * 4 // 3
        assert len(inner.replace(REDACTED, "")) <= prefix_chars + 6


def test_other_text_and_short_or_empty_values_are_left_alone() -> None:
    text = "GET /users ok: 200 rows, page 1 of 3"
    assert scrub(text, [SECRET]) == text
    assert scrub(text, ["", "ok", "abc"]) == text  # too short to scrub: would hit words
    assert secret_variants("") == frozenset() and secret_variants("abc") == frozenset()
    assert scrub(text, []) == text


def test_several_secrets_and_overlapping_forms() -> None:
    other = "tok_ABCDEFGH12345678"
    text = f"key={quote_plus(SECRET)}&token={other}&again={SECRET}"
    assert scrub(text, [SECRET, other]) == f"key={REDACTED}&token={REDACTED}&again={REDACTED}"


def test_scrub_value_walks_json_like_data_keys_included() -> None:
    value = {
        "next": f"https://api.example/items?page=2&api_key={quote(SECRET, safe='')}",
        SECRET: [1, None, True, (SECRET, 2.5)],
        "nested": {"repr": repr({"key": SECRET})},
    }
    scrubbed = scrub_value(value, [SECRET])
    assert json.dumps(scrubbed).count("0c4f9a71") == 0
    assert scrubbed["next"] == f"https://api.example/items?page=2&api_key={REDACTED}"
    assert scrubbed[REDACTED] == [1, None, True, [REDACTED, 2.5]]
    assert scrub_value(value, []) is value
