"""How a run gets its catalog, and how `search_tools` searches the tools not advertised.

A run loads its catalog once, packed (`tools._catalog_pack`): compressed JSON, so a
registry of a thousand operations fits in history and in continue-as-new's input. Runs
that started before the packed catalog keep loading the plain list (the `packed-catalog`
patch), and keep their keyword search, so their replays schedule and find the same.
Runs started by `DurableTools.start` (`AgentInput.revision` 1) skip the patch call, and the
marker and search-attribute upsert it records; from revision 2 the catalog activity runs as
a local activity on the worker running the run (every durable-tools worker registers it):
its result is one marker in history, with no server round trip and no extra workflow task.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from durable_tools._activities._types import CATALOG_ACTIVITY, CatalogRequest
from durable_tools.protocol._run_io import REVISION_LOCAL_CATALOG, REVISION_SHORT_START
from durable_tools.protocol._types import RunStatus
from durable_tools.tools._bm25 import terms
from durable_tools.tools._catalog import keyword_search, search_index
from durable_tools.tools._catalog_pack import (
    CATALOG_PACKED_ACTIVITY,
    PackedCatalog,
    unpack,
    unpack_terms,
)
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows.catalog._view import advertised, deferred_tools
from durable_tools.workflows.run._catalog_state import CatalogState
from durable_tools.workflows.run._local_activity import execute_local
from durable_tools.workflows.run._state import EndRun, RunState

__all__ = [
    "CATALOG_PATCH",
    "MAX_SEARCH_QUERY_CHARS",
    "catalog_summary",
    "discover",
    "find_tools",
    "load_catalog",
]

CATALOG_PATCH = "packed-catalog"
"""Runs with this patch load the packed catalog, defer tools beyond
`AgentConfig.max_advertised_tools` and rank searches with BM25."""

_TIMEOUT = timedelta(seconds=60)


async def load_catalog(state: RunState) -> None:
    """Fill `state.catalog.specs` from the worker's registry (one activity).

    Raises:
        EndRun: the catalog is too large even packed (the reason gives the figures).
    """
    input = state.input
    request = CatalogRequest(
        identity=input.identity,
        granted_scopes=input.granted_scopes,
        tools=state.config.tools,
        client_tools=state.config.client_tools,
    )
    if not _packed(state):
        state.catalog.specs = await workflow.execute_activity(
            CATALOG_ACTIVITY,
            request,
            result_type=list[ToolSpec],
            start_to_close_timeout=timedelta(seconds=30),
            summary="load the tool catalog",
        )
        return
    try:
        local = (
            state.input.revision >= REVISION_LOCAL_CATALOG
            and not state.catalog.started_by_older_worker
        )
        packed = await (execute_local if local else workflow.execute_activity)(
            CATALOG_PACKED_ACTIVITY,
            request,
            result_type=PackedCatalog,
            start_to_close_timeout=_TIMEOUT,
            summary="load the tool catalog",
        )
    except ActivityError as error:
        cause = error.cause
        if isinstance(cause, ApplicationError) and cause.type == "CatalogTooLarge":
            raise EndRun(RunStatus.FAILED, cause.message) from None
        raise
    state.catalog.specs = unpack(packed)
    state.catalog.packed = packed
    state.catalog.max_advertised = state.config.max_advertised_tools


def _packed(state: RunState) -> bool:
    """Whether the run loads the packed catalog.

    Runs whose starter knows only the packed catalog (the input's revision, recorded in
    the start event) ask no patch: no marker, no TemporalChangeVersion upsert. Unless an
    older worker, which ignores the revision, ran the run's first task: it asked the patch,
    and core fails a replay that meets its marker without the call. So a replay asks it
    (a replay records nothing new; without the marker the answer is False and ignored),
    and a marker found means the run keeps the older worker's ways.
    """
    if state.input.revision < REVISION_SHORT_START:
        return workflow.patched(CATALOG_PATCH)
    if workflow.unsafe.is_replaying() and workflow.patched(CATALOG_PATCH):
        state.catalog.started_by_older_worker = True
    return True


def catalog_summary(state: RunState) -> str:
    """How the catalog split, for the `run.started` event: advertised, deferred, sizes."""
    offered = f"{len(advertised(state)):,} tools advertised"
    packed = state.catalog.packed
    if packed is None:
        return offered
    return (
        f"{offered}, {len(deferred_tools(state)):,} found through search_tools "
        f"({packed.describe()})"
    )


MAX_SEARCH_QUERY_CHARS = 2_000
"""The part of a `search_tools` query that is searched. Stemming runs inside the workflow
task: a megabyte query took about 3 s there, past the SDK's 2 s deadlock detector, and the
task would fail on every retry. A real query is a sentence."""


def discover(catalog: CatalogState, found: list[ToolSpec]) -> bool:
    """Advertise the tools a search found (best first) from the next turn on; True when
    the advertised set changed (counted in `advertised_changes`: the next model call then
    sends the new definitions).

    With `max_advertised`, only the latest finds stay advertised: a tool found again
    becomes the latest again, and the best of one search stays longest.
    """
    limit = catalog.max_advertised
    changed = False
    for spec in reversed(found):  # worst first
        if spec.name in catalog.discovered:
            if limit is None:
                continue
            catalog.discovered.remove(spec.name)
        catalog.discovered.append(spec.name)
        changed = True
    if limit is not None:
        del catalog.discovered[:-limit]  # older finds are no longer advertised
    if changed:
        catalog.advertised_changes += 1
    return changed


def find_tools(state: RunState, query: str, *, limit: int = 5) -> list[ToolSpec]:
    """The deferred tools best matching `query`, best first (deterministic)."""
    query = query[:MAX_SEARCH_QUERY_CHARS]
    pool = deferred_tools(state)
    if state.catalog.max_advertised is None:
        return keyword_search(pool, query, limit=limit)
    if state.catalog.search_index is None:  # the pool is fixed for the run
        packed = state.catalog.packed
        state.catalog.search_index = search_index(pool, unpack_terms(packed) if packed else None)
    index, by_name = state.catalog.search_index
    return [by_name[name] for name in index.rank(terms(query), limit=limit)]
