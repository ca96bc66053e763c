"""Who a decider is: one person counts once, however their name is written.

Decider names arrive from the inbox (`alice`, or `alice via group:ops` when alice acts as a
member of a group the inbox checked), the CLI and the client API. The policy compares them
with its `deciders` and counts them for the two-person rule, so both must see through the
spelling: `alice`, `ALICE`, ` Alice ` and its full-width form are one person, and
`alice via group:ops` is still alice. Names are compared by their NFKC case fold with runs of
white space made one space and invisible characters (zero-width spaces and joiners, soft
hyphens, direction marks, control characters) dropped, so no name looks like another in the
audit yet counts apart from it; nothing else (look-alike letters from other scripts stay
distinct, so they never match a decider they merely resemble: a policy that names its
deciders fails closed on them). A group (`group:ops`) is never a person: only a member
acting through it decides.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = [
    "GROUP_PREFIX",
    "decider_name",
    "distinct_people",
    "impersonates",
    "may_decide",
    "name_key",
    "person_of",
]

GROUP_PREFIX = "group:"
"""Deciders that name a group (`group:ops`): any member, as checked by the inbox."""

_VIA = " via "


_IGNORABLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
)
"""Invisible characters outside the format and control categories (Unicode's default
ignorables: fillers, variation selectors, the combining grapheme joiner)."""


def _visible(char: str) -> bool:
    if char.isspace():
        return True  # folded into one space below
    return char not in _IGNORABLE and unicodedata.category(char) not in ("Cf", "Cc")


def name_key(name: str) -> str:
    """The comparable form of a person's or group's name (NFKC, case-folded, spaces folded,
    invisible characters dropped)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    # A second NFKC: case folding can produce characters NFKC would still change.
    visible = "".join(filter(_visible, unicodedata.normalize("NFKC", folded)))
    return " ".join(visible.split())


def person_of(decider: str) -> str:
    """The person who decided: `alice via group:ops` and `ALICE` are both `alice`."""
    person, _via, _group = name_key(decider).partition(_VIA)
    return person


def _group_of(decider: str) -> str | None:
    _person, via, group = name_key(decider).partition(_VIA)
    return group if via and group.startswith(GROUP_PREFIX) else None


def may_decide(decider: str, deciders: Iterable[str]) -> bool:
    """Whether `decider` is one of `deciders`: named as a person, or acting through a named
    group. An empty list means anyone (the policy's default) with a name: an empty name, or
    a group's name where a person's belongs (`group:ops`), decides nothing."""
    person = person_of(decider)
    if not person or person.startswith(GROUP_PREFIX):
        return False  # nobody, or a group claiming to be a person
    allowed = {name_key(d) for d in deciders}
    if not allowed:
        return True
    group = _group_of(decider)
    return person in allowed or (group is not None and group in allowed)


def distinct_people(names: Iterable[str]) -> set[str]:
    """The distinct people among decider names (for the two-person rule)."""
    return {person_of(name) for name in names}


_SYSTEM_DECIDERS = frozenset({"deadline", "policy"})
"""Deciders the run itself records (a deadline passing, a policy change)."""


def impersonates(decider: str) -> str | None:
    """Why a person may not decide under this name, or None: the names the run itself
    writes in its audit (`deadline`, `policy`, `auto:<evaluator>`) would make the record
    show a person as the machine. (A `+` stays allowed, for plus-addressed e-mail names,
    although `decided_by` joins two approvers with it: `approval.partial` events and
    `PendingApproval.approved_by` name each one.)"""
    person = person_of(decider)
    if person in _SYSTEM_DECIDERS or person.startswith("auto:"):
        return f"{person!r} is the name the run records for its own decisions"
    return None


def decider_name(person: str, groups: Iterable[str], deciders: Iterable[str]) -> str | None:
    """The decider name to record for `person` on a call with these `deciders`, or None.

    `person` itself when the policy names them (however spelled) or lets anyone decide;
    `person via group:g` when it names a group `g` of `groups` (the person's groups, as
    someone who checked them says: the inbox's tokens file). None for a name that is no
    person's (empty, a group, a name the run records for itself, or one that already
    claims a group: `bob via group:ops` would be a membership nobody checked).
    """
    key = name_key(person)
    if not key or key.startswith(GROUP_PREFIX) or person_of(person) != key:
        return None
    if impersonates(person) is not None:
        return None
    if not may_decide(person, deciders):
        allowed = {name_key(d) for d in deciders}
        for group in groups:
            if name_key(GROUP_PREFIX + group) in allowed:
                return f"{person}{_VIA}{GROUP_PREFIX}{group}"
        return None
    return person
