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
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from durable_tools._activities._types import (
    CATALOG_ACTIVITY,
    CATALOG_UPDATE_ACTIVITY,
    CatalogRequest,
    CatalogUpdate,
    CatalogUpdateRequest,
)
from durable_tools.protocol._limits import MAX_REASON_CHARS, clip
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
    "CATALOG_RECHECK",
    "CATALOG_RECHECK_AFTER_WAIT",
    "MAX_SEARCH_QUERY_CHARS",
    "catalog_summary",
    "discover",
    "find_tools",
    "follow_worker",
    "followed_version",
    "load_catalog",
    "note_durable_wait",
    "note_worker_version",
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
    request = _request(state)
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
    state.catalog.checked_at = workflow.now()


def _request(state: RunState) -> CatalogRequest:
    input = state.input
    return CatalogRequest(
        identity=input.identity,
        granted_scopes=input.granted_scopes,
        tools=state.config.tools,
        client_tools=state.config.client_tools,
    )


# ------------------------------------------------- following the worker's catalog

CATALOG_RECHECK = timedelta(seconds=60)
"""Before a model turn that comes this long after the run last learnt the worker's registry
version (a slow tool, a long retry backoff, a script's sleep), the run asks the worker (one
local activity) instead of trusting the last model turn's report.

Why a minute: between two model turns of a busy run the last turn's report is one tool
call old, and the next turn reports again, so a recheck there buys little. Under load such
a cycle takes seconds (p95 1.2 s a call at 50 concurrent runs on 2 cores, more at 500):
with the former 1 s, a loaded run paid a local activity and a marker on most turns (4.0
markers in a 6-turn run of 5 calls instead of 1). A minute is far above any busy cycle,
and against a pause that long the recheck's cost (a few ms of CPU, a marker) is nil."""

CATALOG_RECHECK_AFTER_WAIT = timedelta(seconds=1)
"""After a durable wait for someone outside the run (an approval, an answer, a session's
next message: `note_durable_wait`), the threshold is this instead: a person's pause is
when a deploy or a provider refresh lands. Shorter waits are answers given by code (a
policy, a parent run), as quick as a busy turn; they are also what runs recorded under
the one-second rule did without a read, and still replay without one."""

_UPDATE_ATTEMPTS = 3


def followed_version(state: RunState) -> str | None:
    """The registry version the run's catalog came from, when the run follows the worker's
    catalog; else None. Runs follow when their catalog has a version (`PackedCatalog`,
    recorded in history, carried over continue-as-new): a replay decides the same, and
    runs loaded by older workers keep the catalog they recorded."""
    packed = state.catalog.packed
    return None if packed is None else packed.version


def note_worker_version(state: RunState, version: str | None) -> None:
    """After a model turn: the worker's registry version it reported (None: unchanged)."""
    if followed_version(state) is None:
        return
    state.catalog.checked_at = workflow.now()
    if version is not None:
        state.catalog.worker_version = version


def note_durable_wait(state: RunState) -> None:
    """After a durable wait for someone outside the run (an approval, an answer, a session's
    next message): the worker's catalog may have changed meanwhile; the next model turn
    reads it again if the run last learnt it `CATALOG_RECHECK_AFTER_WAIT` ago or more."""
    state.catalog.waited = True


async def follow_worker(state: RunState) -> None:
    """Before a model turn: read the catalog again if the worker's may have changed.

    The model then sees the tools as the worker has them now: new tools, replaced schemas
    and descriptions, withdrawn tools gone. Calls already validated (one waiting for
    approval, say) keep the spec they were validated with. At most one read per turn, as
    a local activity (a marker in history); a read that fails keeps the catalog the run
    has, says so in an event, and is not retried for the same worker version.
    """
    known = followed_version(state)
    if known is None:
        return
    catalog = state.catalog
    reported = catalog.worker_version
    changed = reported is not None and reported not in (known, catalog.failed_version)
    now = workflow.now()
    recheck = CATALOG_RECHECK_AFTER_WAIT if catalog.waited else CATALOG_RECHECK
    stale = catalog.checked_at is None or now - catalog.checked_at >= recheck
    catalog.waited = False  # this turn's report covers a wait too short to read again
    if not (changed or stale):
        return
    catalog.checked_at = now
    catalog.worker_version = None
    try:
        update = await execute_local(
            CATALOG_UPDATE_ACTIVITY,
            CatalogUpdateRequest(request=_request(state), known=known),
            result_type=CatalogUpdate,
            start_to_close_timeout=_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=_UPDATE_ATTEMPTS),
            summary="read the changed tool catalog",
        )
    except ActivityError as error:
        catalog.failed_version = reported
        cause = error.cause
        why = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
        state.event(
            "catalog.update_failed",
            detail=clip(f"kept the catalog the run has: {why}", MAX_REASON_CHARS),
        )
        return
    if update.packed is not None:
        _replace_catalog(state, update.packed)


def _replace_catalog(state: RunState, packed: PackedCatalog) -> None:
    catalog = state.catalog
    before = {spec.name: spec for spec in catalog.specs}
    specs = unpack(packed)
    after = {spec.name: spec for spec in specs}
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    changed = sorted(n for n in after.keys() & before.keys() if after[n] != before[n])
    catalog.specs = specs
    catalog.packed = packed
    catalog.search_index = None
    catalog.discovered = [name for name in catalog.discovered if name in after]
    if not (added or removed or changed):
        return  # another tool changed, or one this run does not see
    catalog.advertised_changes += 1
    parts = [
        f"{label} {_names(names)}"
        for label, names in (("added", added), ("removed", removed), ("changed", changed))
        if names
    ]
    state.event("catalog.changed", detail=clip("; ".join(parts), MAX_REASON_CHARS))


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown if len(names) <= _NAMED else f"{shown} and {len(names) - _NAMED:,} more"


_NAMED = 10
"""Most tool names a `catalog.changed` event names per kind of change."""


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
