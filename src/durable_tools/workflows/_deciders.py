"""Who a decider is: one person counts once, however their name is written.

Decider names arrive from the inbox (`alice`, or `alice via group:ops` when alice acts as a
member of a group the inbox checked), the CLI and the client API. The policy compares them
with its `deciders` and counts them for the two-person rule, so both must see through the
spelling: `alice`, `ALICE`, ` Alice ` and its full-width form are one person, and
`alice via group:ops` is still alice. Names are compared by their NFKC case fold with runs of
white space made one space; nothing else (look-alike letters from other scripts stay
distinct, so they never match a decider they merely resemble: a policy that names its
deciders fails closed on them).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["GROUP_PREFIX", "distinct_people", "may_decide", "name_key", "person_of"]

GROUP_PREFIX = "group:"
"""Deciders that name a group (`group:ops`): any member, as checked by the inbox."""

_VIA = " via "


def name_key(name: str) -> str:
    """The comparable form of a person's or group's name (NFKC, case-folded, spaces folded)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    # A second NFKC: case folding can produce characters NFKC would still change.
    return " ".join(unicodedata.normalize("NFKC", folded).split())


def person_of(decider: str) -> str:
    """The person who decided: `alice via group:ops` and `ALICE` are both `alice`."""
    person, _via, _group = name_key(decider).partition(_VIA)
    return person


def _group_of(decider: str) -> str | None:
    _person, via, group = name_key(decider).partition(_VIA)
    return group if via and group.startswith(GROUP_PREFIX) else None


def may_decide(decider: str, deciders: Iterable[str]) -> bool:
    """Whether `decider` is one of `deciders`: named as a person, or acting through a named
    group. An empty list means anyone (the policy's default)."""
    allowed = {name_key(d) for d in deciders}
    if not allowed:
        return True
    group = _group_of(decider)
    return person_of(decider) in allowed or (group is not None and group in allowed)


def distinct_people(names: Iterable[str]) -> set[str]:
    """The distinct people among decider names (for the two-person rule)."""
    return {person_of(name) for name in names}
