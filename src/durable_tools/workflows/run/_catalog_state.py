"""The tools a run may use and what it advertises of them: the catalog (as specs, and as
the packed catalog activity sent it), the deferred tools found so far, the search index.

Data only, so that `_state` can hold it and the stages below `catalog/` can read it;
only `workflows/catalog/` changes it (`bench.state_use` counts assignments made anywhere
else). The specs (or the packed catalog) and the tools found are carried over
continue-as-new (as the `CarriedState` fields `catalog`, `catalog_packed` and
`discovered`, see `_carry`); the rest is rebuilt. A run whose catalog carries a registry
version follows the worker's catalog: it reads it again before a model turn when the
worker's changed (`_run_catalog.follow_worker`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from durable_tools.tools._catalog_pack import PackedCatalog
from durable_tools.tools._spec import ToolSpec

__all__ = ["CatalogState"]


@dataclass
class CatalogState:
    """The catalog of one run."""

    specs: list[ToolSpec] = field(default_factory=list)
    """The tools this run may use, from the catalog activity (recorded in history)."""
    packed: PackedCatalog | None = None
    """`specs` as the packed catalog activity sent it; carried instead of the specs."""
    discovered: list[str] = field(default_factory=list)
    """Deferred tools found through `search_tools`, advertised from then on."""

    # Not carried: rebuilt.
    max_advertised: int | None = None
    """Most tools advertised up front (the config's, for runs with a packed catalog); None
    for runs that started before automatic deferral: all their tools are advertised."""
    search_index: Any = None
    """The BM25 index over the deferred tools, built at the first search."""
    advertised_changes: int = 0
    """Searches and catalog updates in this history that changed the advertised set: tool
    definitions the model activity stored at an earlier count are not sent by reference
    again, nor reused from memory."""
    worker_version: str | None = None
    """The worker's registry version, when a model turn reported one other than the
    catalog's (`PackedCatalog.version`): the catalog is read again before the next turn."""
    checked_at: datetime | None = None
    """When the run last learnt the worker's registry version (workflow time)."""
    waited: bool = False
    """The run waited durably for someone outside it since the last model turn (see
    `_run_catalog.note_durable_wait`)."""
    selected: frozenset[str] | None = None
    """The tools the run's tool selector chose for the last model turn (None: no selector,
    or no turn yet); that turn's calls are checked against them."""
    failed_version: str | None = None
    """A worker version whose catalog could not be read: not asked again on its report."""
    started_by_older_worker: bool = False
    """A run whose input has `revision` 1 had its first task run by a worker that ignores
    the revision (see `_run_catalog.load_catalog`): it records what runs before it did."""
