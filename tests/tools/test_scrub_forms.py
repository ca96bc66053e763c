"""`Spelling.end` follows a secret exactly as the whole spelling's regex would match it."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from durable_tools.tools._scrub import _matcher
from durable_tools.tools._scrub_forms import Spelling, encoded, wrapped_base64

ALPHABET = "ab%&=\\+ /\"'\né🔑"


def whole(spelling: Spelling) -> re.Pattern[str]:
    source = spelling.units[0] if spelling.units else ""
    for brk, unit in zip(spelling.breaks, spelling.units[1:], strict=True):
        source += brk + unit
    return re.compile(source)


def written(secret: str, picks: list[int], breaks: list[bool]) -> str:
    """`secret` with each character in one of its forms (chosen by `picks`), written out
    by a regex's own spelling where that is a plain string."""
    samples = {
        "a": ["a", "%61", "%2561", "\\x61", "\\\\u0061", "&#97;", "=61"],
        "%": ["%", "%25", "%2525", "\\u0025", "&#x25;"],
        "\\": ["\\", "\\\\", "\\\\\\\\", "\\x5C", "%5c"],
        "\n": ["\n", "\\n", "%0A"],
    }
    text = ""
    for index, char in enumerate(secret):
        options = samples.get(char, [char, "%" + char.encode().hex(), f"&#{ord(char)};"])
        text += options[picks[index % len(picks)] % len(options)]
        if breaks[index % len(breaks)]:
            text += "\n"
    return text


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=ALPHABET, min_size=1, max_size=30),
    st.lists(st.integers(0, 10), min_size=1),
    st.lists(st.booleans(), min_size=1),
    st.text(alphabet=ALPHABET + "x5c0", max_size=6),
)
def test_following_a_spelling_agrees_with_its_whole_regex(
    secret: str, picks: list[int], breaks: list[bool], tail: str
) -> None:
    text = written(secret, picks, breaks) + tail
    spelling = encoded(secret)
    expected = whole(spelling).match(text)
    assert spelling.end(text, 0) == (expected.end() if expected else None)


@given(
    st.text(alphabet="ABab01+/", min_size=1, max_size=40), st.text(alphabet="A\n \r", max_size=60)
)
def test_following_wrapped_base64_agrees_with_its_whole_regex(fragment: str, noise: str) -> None:
    text = "".join(c + noise[i % len(noise)] if noise else c for i, c in enumerate(fragment))
    spelling = wrapped_base64(fragment)
    expected = whole(spelling).match(text)
    assert spelling.end(text, 0) == (expected.end() if expected else None)


def test_every_alternative_of_a_secrets_pattern_starts_with_a_literal_character() -> None:
    # What lets `re` skip ahead to where an alternative may match instead of trying the
    # pattern at every position (sre's charset prefix, see `re._compiler`).
    for secret in ("sk-Live/9+Q \"x'\\é-0c4f9a71", ALPHABET, "%%%%==&&", "\\\\ab\n", "🔑🔑x "):
        matcher = _matcher(secret)
        assert matcher is not None
        [(op, (_, branches))] = re._parser.parse(matcher.pattern.pattern).data  # type: ignore[attr-defined]
        assert op is re._constants.BRANCH  # type: ignore[attr-defined]
        for branch in branches:
            assert branch.data[0][0] is re._constants.LITERAL, branch  # type: ignore[attr-defined]
