"""Which tools a run sees, and how a model finds deferred ones.

Pure functions over specs: the worker uses them to build a run's catalog, and the
agent workflow uses `search_specs` on the catalog already in its history, so a
search costs no activity and replays deterministically. `search_specs` ranks with BM25
(`_bm25`); `keyword_search` is the earlier scoring, kept for runs that started with it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Iterable, Mapping

from ._bm25 import BM25Index, Stems, spec_terms, terms
from ._catalog_pack import SpecTerms
from ._context import Identity
from ._spec import LoadingMode, ToolSpec


class IdentityIncomplete(LookupError):
    """A catalog that requires a full identity was asked for without one."""


IDENTITY_PARTS = ("user", "tenant", "session")
"""The parts of an `Identity`, in the order errors name them."""


def missing_identity(
    identity: Identity | None, parts: Collection[str] = IDENTITY_PARTS
) -> list[str]:
    """The `parts` that `identity` lacks, in `IDENTITY_PARTS` order. A part that is blank
    (white space only) is missing: it scopes nothing."""
    return [
        part
        for part in IDENTITY_PARTS
        if part in parts and (identity is None or not (getattr(identity, part) or "").strip())
    ]


def require_identity(identity: Identity | None, parts: Collection[str], who: str) -> None:
    """Refuse a run whose identity lacks any of `parts`.

    Args:
        identity: The run's identity.
        parts: The parts it must name (`user`, `tenant`, `session`).
        who: What requires them, for the message ("this worker").

    Raises:
        IdentityIncomplete: naming the parts missing and who requires them.
    """
    missing = missing_identity(identity, parts)
    if missing:
        wanted = " and ".join(p for p in IDENTITY_PARTS if p in parts)
        raise IdentityIncomplete(
            f"{who} serves runs only for an identity with a {wanted}; missing: "
            f"{', '.join(missing)} (start the run with identity=Identity(...), or "
            "--user/--tenant on the command line)"
        )


__all__ = [
    "IDENTITY_PARTS",
    "IdentityIncomplete",
    "filter_specs",
    "keyword_search",
    "missing_identity",
    "require_identity",
    "search_index",
    "search_specs",
    "tokenize",
]

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercase words of `text`; `get_weather` and `getWeather`-style text split alike."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return _TOKEN.findall(spaced.lower())


def filter_specs(
    specs: Iterable[ToolSpec],
    *,
    granted_scopes: Collection[str] | None = None,
    loading: LoadingMode | str | None = None,
    pattern: str | None = None,
    transport: str | None = None,
    source: str | None = None,
    mime_type: str | None = None,
    tag: str | None = None,
) -> list[ToolSpec]:
    """The specs a run may see.

    Args:
        specs: Candidate specs.
        granted_scopes: Scopes granted to the run. A tool needing a scope outside them is
            invisible; None grants nothing (fail closed), so scoped tools are hidden.
        loading: Keep only tools of this loading mode; None keeps all.
        pattern: A glob over names (`github_*`); None keeps all.
        transport: Keep only tools reached this way (`function`, `mcp`, `http`,
            `sub-agent`).
        source: A glob over the tools' `source` (`mcp:github*`); a tool without one fails it.
        mime_type: Keep only tools that handle this MIME type; `image/*` in a tool's list
            matches `image/png`.
        tag: Keep only tools with this tag.

    Returns:
        The visible specs, in input order.
    """
    granted = set(granted_scopes or ())
    mode = LoadingMode(loading) if loading is not None else None
    return [
        spec
        for spec in specs
        if set(spec.auth_scopes) <= granted
        and (mode is None or spec.loading == mode)
        and (pattern is None or fnmatch.fnmatchcase(spec.name, pattern))
        and (transport is None or spec.transport == transport)
        and (source is None or fnmatch.fnmatchcase(spec.source or "", source))
        and (mime_type is None or _handles(spec, mime_type))
        and (tag is None or tag in spec.tags)
    ]


def _handles(spec: ToolSpec, mime_type: str) -> bool:
    wanted = mime_type.lower()
    return any(fnmatch.fnmatchcase(wanted, handled.lower()) for handled in spec.mime_types)


def _score(spec: ToolSpec, terms: list[str], phrase: str) -> float:
    name_tokens = set(tokenize(spec.name))
    tag_tokens = {t for tag in spec.tags for t in tokenize(tag)}
    description = spec.description.lower()
    description_tokens = set(tokenize(spec.description))
    score = 0.0
    if phrase and phrase in spec.name.lower():
        score += 5
    for term in terms:
        if term in name_tokens:
            score += 4
        elif any(term in token for token in name_tokens):
            score += 2
        if term in tag_tokens:
            score += 3
        elif any(term in token for token in tag_tokens):
            score += 1.5
        if term in description_tokens:
            score += 1
        elif term in description:
            score += 0.5
    return score


def keyword_search(specs: Iterable[ToolSpec], query: str, *, limit: int = 5) -> list[ToolSpec]:
    """Rank specs by how well name, tags and description match `query` (the first scoring).

    Runs that started before BM25 keep it, so their replays find what they found. Scoring
    is simple and explainable: whole-word matches weigh more than substring
    matches, and the name more than tags, tags more than the description. Ties are
    broken by name so the order is deterministic.

    Args:
        specs: Specs to search (usually the run's deferred tools).
        query: Free text, e.g. "create a github issue".
        limit: Most results.

    Returns:
        Matching specs, best first; none when nothing matches.
    """
    terms = tokenize(query)
    phrase = "_".join(terms)
    if not terms or limit <= 0:
        return []
    scored = [(_score(spec, terms, phrase), spec) for spec in specs]
    ranked = sorted((item for item in scored if item[0] > 0), key=lambda x: (-x[0], x[1].name))
    return [spec for _, spec in ranked[:limit]]


def search_index(
    specs: Iterable[ToolSpec], known: Mapping[str, SpecTerms] | None = None
) -> tuple[BM25Index, dict[str, ToolSpec]]:
    """A BM25 index over `specs` and the specs by name (build once, search many times).

    Args:
        specs: What to index.
        known: Terms already computed, by spec name (a packed catalog's); the others are
            computed here.
    """
    by_name = {spec.name: spec for spec in specs}
    known = known or {}
    stems = Stems()  # this index's own: see `Stems`
    documents = [
        (name, known[name] if name in known else spec_terms(spec, stems))
        for name, spec in by_name.items()
    ]
    return BM25Index(documents), by_name


def search_specs(specs: Iterable[ToolSpec], query: str, *, limit: int = 5) -> list[ToolSpec]:
    """Rank specs by BM25 over their names, tags, descriptions and parameters.

    Words are split at `_`, `-`, `/` and camelCase, stemmed (`pulls` finds `pull`), and a
    tool's name and one-line summary weigh more than the rest. Ties are broken by name so
    the order is deterministic.

    Args:
        specs: Specs to search (usually the run's deferred tools).
        query: Free text, e.g. "create a github issue".
        limit: Most results.

    Returns:
        Matching specs, best first; none when nothing matches.
    """
    index, by_name = search_index(specs)
    return [by_name[name] for name in index.rank(terms(query), limit=limit)]
