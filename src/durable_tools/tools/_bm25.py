"""BM25 ranking of tool specs, for `search_tools` over catalogs of any size.

Each spec becomes one bag of stemmed words: its name (split at `_`, `-`, `/` and
camelCase humps), tags, description and the names and descriptions of its parameters,
the name and the description's first line counted several times (a crude BM25F: they
say what the tool does; the rest of a description is often boilerplate). Okapi BM25
then scores a query against every bag.

Pure Python on purpose: the ranking runs inside the agent workflow, where it must be
deterministic on every platform and replay. Libraries such as `rank-bm25` or `bm25s`
bring numpy (and its platform-dependent float reductions) into the workflow sandbox for
an index of a few thousand short documents, which plain dictionaries handle in
milliseconds. Scores are rounded before sorting and ties go to the name, so the order
never depends on the last bit of a float or on set iteration order.
"""

from __future__ import annotations

import math
import re
import types
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# The pure-Python stemmer itself, not `snowballstemmer.stemmer("english")`: that answers
# PyStemmer's C stemmer where PyStemmer is installed, and two workers must stem alike.
from snowballstemmer.english_stemmer import (  # type: ignore[import-untyped]  # no hints
    EnglishStemmer,
)

from ._spec import ToolSpec

__all__ = ["BM25Index", "Stems", "spec_terms", "terms", "words"]

_WORD = re.compile(r"[a-z0-9]+")
_UPPER_RUN = re.compile(r"[A-Z]+")
_URL = re.compile(r"https?://\S+")

_STOPWORD_TEXT = """
a an and any are as at be by can do for from get i in into is it its me my of on or our
please some that the their them these this those to use using we with you your
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words that say nothing about what a tool does. `get` is one: in a REST API nearly every
read is a get, and queries say "get the contents of a file" for `repos_get_content`."""

_SYNONYMS = types.MappingProxyType(
    {"repositori": "repo", "organ": "org", "pr": "pull", "prs": "pull"}
)
"""Stems that API names abbreviate: `repos_*` and "repository", `orgs_*` and
"organization", `pulls_*` and "PR" mean the same thing."""

_HEAD_WEIGHT = 2.0
"""How much the head field (name, summary, tags) counts against the body: what a tool is
called says more about what it does than its parameters' prose."""
_SCHEMA_DEPTH = 2
"""Nesting levels of the input schema whose parameter names count (the body's fields)."""


class Stems:
    """Stems words for one computation: one query, or one catalog's index.

    Never shared between computations. Snowball's stemmer keeps its working state on the
    instance, so two threads stemming through one instance (workers run many runs and
    activities at once) corrupt each other's words or raise `IndexError`; and a cache
    that outlived a computation would carry such a wrong stem into every later run of the
    worker, where a replay on a fresh worker computes another and fails as
    non-deterministic. With a stemmer and a cache of its own per computation, terms are a
    pure function of their text.
    """

    def __init__(self) -> None:
        self._stemmer = EnglishStemmer()
        self._cache: dict[str, str] = {}  # a catalog repeats the same few words

    def term(self, word: str) -> str:
        """The stem of one lowercase `word`, abbreviations folded (`repositories` -> `repo`)."""
        stem = self._cache.get(word)
        if stem is None:
            stemmed: str = self._stemmer.stemWord(word)
            stem = self._cache[word] = _SYNONYMS.get(stemmed, stemmed)
        return stem

    def terms(self, text: str) -> list[str]:
        """The searchable terms of `text`: words without stopwords, stemmed."""
        return [self.term(w) for w in words(text) if w not in _STOPWORDS]


def words(text: str) -> list[str]:
    """Lowercase words of `text`: `get_weather`, `getWeather` and `get-weather` alike."""
    return _WORD.findall(_split_humps(_URL.sub(" ", text)).lower())


def _split_humps(text: str) -> str:
    """`text` with a space at each camelCase hump (`getHTTPServer` -> `get HTTP Server`).

    The same output as `re.sub(r"([a-z0-9])([A-Z])|([A-Z]+)([A-Z][a-z])", r"\1\3 \2\4",
    text)`, which this replaced: that pattern backtracks over every suffix of a run of
    capitals, quadratic in its length (30,000 capitals took 9 s, inside a workflow task
    when a model's `search_tools` query holds them). Here each run is looked at once.

    A run of capitals `text[start:end]` gets a space before it when a lowercase letter or
    digit precedes it (the pattern's first branch), unless that character was the
    lowercase letter the previous run's second branch consumed; and a space before its
    last capital when a lowercase letter follows it and at least two capitals are left
    after the first branch took one (`HTTPServer` -> `HTTP Server`).
    """
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces
    consumed = -1  # the lowercase letter the last second-branch split took
    for run in _UPPER_RUN.finditer(text):
        start, end = run.span()
        first = start
        if start > 0 and start - 1 != consumed and _lower_or_digit(text[start - 1]):
            pieces += (text[done:start], " ")
            done, first = start, start + 1
        if end - first >= 2 and end < len(text) and "a" <= text[end] <= "z":
            pieces += (text[done : end - 1], " ")
            done = end - 1
            consumed = end
    pieces.append(text[done:])
    return "".join(pieces)


def _lower_or_digit(char: str) -> bool:
    return "a" <= char <= "z" or "0" <= char <= "9"


def terms(text: str, stems: Stems | None = None) -> list[str]:
    """The searchable terms of `text`: words without stopwords, stemmed (`pulls` -> `pull`).

    Args:
        text: Any text.
        stems: The stemmer of the computation this is part of; None: a new one.
    """
    return (stems or Stems()).terms(text)


def spec_terms(spec: ToolSpec, stems: Stems | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """The two fields one spec is indexed under, as term counts: what it is (name, summary,
    tags) and the rest (the description's body, its parameters' names and descriptions).

    Term order within a field is the order of first appearance (deterministic JSON).

    Args:
        spec: The spec.
        stems: The stemmer of the index this is for (one per index saves stemming the
            catalog's common words again per spec); None: a new one.
    """
    stems = stems or Stems()
    summary, _, rest = spec.description.strip().partition("\n")
    head = stems.terms(spec.name) + stems.terms(summary)
    for tag in spec.tags:
        head += stems.terms(tag)
    body = stems.terms(rest) + stems.terms(" ".join(_schema_text(spec.input_schema, _SCHEMA_DEPTH)))
    return dict(Counter(head)), dict(Counter(body))


def _schema_text(schema: Mapping[str, Any], depth: int) -> Iterable[str]:
    properties = schema.get("properties")
    if depth <= 0 or not isinstance(properties, Mapping):
        return
    for name, sub in properties.items():
        yield str(name)
        if isinstance(sub, Mapping):
            description = sub.get("description")
            if isinstance(description, str):
                yield description
            yield from _schema_text(sub, depth - 1)


class BM25Index:
    """Okapi BM25 over named documents of weighted fields; ties broken by name.

    Each field is scored with its own length normalisation (a long description must not
    drown a short name), the fields' scores summed by weight; a term's IDF counts the
    documents holding it in any field.

    Args:
        documents: (name, fields) pairs, each field a bag of terms with their counts, every
            document with as many fields as `weights`; names should be unique.
        weights: How much each field's score counts.
        k1: Term-frequency saturation.
        b: Field-length normalisation.
    """

    def __init__(
        self,
        documents: Sequence[tuple[str, Sequence[Mapping[str, int]]]],
        *,
        weights: Sequence[float] = (_HEAD_WEIGHT, 1.0),
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self._names = [name for name, _ in documents]
        self._weights = list(weights)
        self._k1 = k1
        self._fields: list[list[Mapping[str, int]]] = []
        self._norms: list[list[float]] = []
        for f in range(len(weights)):
            bags = [fields[f] for _, fields in documents]
            lengths = [sum(bag.values()) for bag in bags]
            average = sum(lengths) / len(lengths) if lengths else 0.0
            self._fields.append(bags)
            self._norms.append(
                [k1 * (1 - b + b * (n / average if average else 0.0)) for n in lengths]
            )
        frequency: Counter[str] = Counter()
        for _, fields in documents:
            frequency.update({term: 1 for bag in fields for term in bag})
        total = len(documents)
        # The "+1" keeps the IDF positive for a term in more than half the documents.
        self._idf = {
            term: math.log(1 + (total - seen + 0.5) / (seen + 0.5))
            for term, seen in frequency.items()
        }

    def __len__(self) -> int:
        return len(self._names)

    def rank(self, query: list[str], *, limit: int) -> list[str]:
        """Names of the best `limit` documents for `query` terms; none scoring zero."""
        wanted = [t for t in dict.fromkeys(query) if t in self._idf]
        if not wanted or limit <= 0:
            return []
        scored: list[tuple[float, str]] = []
        for i, name in enumerate(self._names):
            score = 0.0
            for weight, counts, norms in zip(self._weights, self._fields, self._norms, strict=True):
                for term in wanted:
                    tf = counts[i].get(term, 0)
                    if tf:
                        score += weight * self._idf[term] * tf * (self._k1 + 1) / (tf + norms[i])
            if score > 0:
                # Rounded: platforms may differ in a float's last bits, never in 9 digits.
                scored.append((-round(score, 9), name))
        scored.sort()
        return [name for _, name in scored[:limit]]
