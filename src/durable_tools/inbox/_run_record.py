"""What a run recorded about itself, read from its history: whom it acts for, the prompt
it started with, and its tool catalog.

The catalog is the one the run's tools were described and classified by when it loaded
it (the catalog activity's result, a local-activity marker or an activity completion in
its first events; a continued run carries it in its input). The call page reads a tool's
description and safety class there, not from whatever `--tools` the inbox was started
with: a worker deployed since may describe the tool differently, and an inbox without
`--tools` knows nothing.

Reading is bounded: only the first `MAX_EVENTS` events are looked at (the catalog loads in
the run's first workflow task), a packed catalog is decompressed up to `MAX_CATALOG_BYTES`,
and records are cached per run (`RunRecords`, at most `CACHE_SIZE`). A parsed catalog is
large (a 1,200-tool OpenAPI catalog is some 28 MB), and runs of one agent record the same
one: records share one parsed copy per distinct catalog, and the copies kept are bounded
by their JSON size (`CATALOG_CACHE_BYTES`; a record whose copy is dropped is read again).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import MarkerRecordedEventAttributes

from durable_tools._activities._types import CATALOG_ACTIVITY
from durable_tools.client import DurableTools
from durable_tools.tools import Identity
from durable_tools.tools._catalog_pack import CATALOG_PACKED_ACTIVITY
from durable_tools.tools._spec import ToolSpec

__all__ = [
    "CACHE_SIZE",
    "CATALOG_CACHE_BYTES",
    "MAX_CATALOG_BYTES",
    "MAX_EVENTS",
    "RunRecord",
    "RunRecords",
]

MAX_EVENTS = 500
"""History events looked at for the catalog before giving up."""
MAX_CATALOG_BYTES = 32 * 1024 * 1024
"""Largest catalog JSON unpacked (a packed catalog is at most a payload, 2 MB, compressed)."""
CACHE_SIZE = 256
"""Runs whose record the inbox keeps (a record does not change while a run lives)."""
CATALOG_CACHE_BYTES = 32 * 1024 * 1024
"""JSON bytes of the distinct parsed catalogs the records keep (the newest one is always
kept); parsed, a catalog takes about ten times its JSON size."""
_CATALOG_TYPES = frozenset({CATALOG_ACTIVITY, CATALOG_PACKED_ACTIVITY})
_LOCAL_ACTIVITY_MARKER = "core_local_activity"


@dataclass(frozen=True)
class RunRecord:
    """What a run's history says about it."""

    prompt: str | None = None
    identity: Identity = field(default_factory=Identity)
    catalog: dict[str, dict[str, Any]] | None = None
    """The recorded specs by tool name, as JSON; None when the catalog was not found."""

    def spec(self, tool: str) -> ToolSpec | None:
        """The recorded spec of `tool`; None when not recorded or not readable here."""
        raw = (self.catalog or {}).get(tool)
        if raw is None:
            return None
        try:
            return ToolSpec.model_validate(raw)
        except ValidationError:  # a spec from another version of the library
            return None


def _unpack(packed: Any) -> list[Any]:
    """The specs of a `PackedCatalog` (as JSON), decompressed within the bound."""
    return _unpack_sized(packed)[0]


def _unpack_sized(packed: Any) -> tuple[list[Any], int]:
    """`_unpack`'s specs, and the size of their JSON."""
    if not isinstance(packed, dict) or not isinstance(packed.get("data"), str):
        return [], 0
    try:
        squeezed = base64.b64decode(packed["data"], validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(squeezed, MAX_CATALOG_BYTES)
        if inflater.unconsumed_tail:
            return [], 0  # larger than any catalog: a bomb, or not ours
        specs = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError, RecursionError):
        return [], 0
    return (specs, len(raw)) if isinstance(specs, list) else ([], 0)


def _by_name(specs: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(specs, list):
        return {}
    return {s["name"]: s for s in specs if isinstance(s, dict) and isinstance(s.get("name"), str)}


def _catalog_key(result: Any) -> str | None:
    """What tells one recorded catalog from another: the digest of its packed data."""
    if isinstance(result, dict) and isinstance(result.get("data"), str):
        return hashlib.sha256(result["data"].encode()).hexdigest()
    return None  # a plain list (older runs): small, not shared


class RunRecords:
    """Reads runs' records from their histories, through the inbox's client (so with
    its codec, when it has the keys), and keeps the last `CACHE_SIZE`."""

    def __init__(self, tools: DurableTools, *, catalog_bytes: int = CATALOG_CACHE_BYTES) -> None:
        self._tools = tools
        self._cache: OrderedDict[tuple[str, int], RunRecord] = OrderedDict()
        self._catalogs: OrderedDict[str, tuple[dict[str, dict[str, Any]], int]] = OrderedDict()
        self._catalog_bytes = catalog_bytes

    @property
    def catalogs(self) -> int:
        """Distinct parsed catalogs kept."""
        return len(self._catalogs)

    def _catalog_of(self, result: Any) -> dict[str, dict[str, Any]]:
        """A catalog activity's result (the packed form, or the plain list of older
        runs), parsed once for every run that recorded the same one."""
        key = _catalog_key(result)
        if key is None:
            return _by_name(result)
        kept = self._catalogs.get(key)
        if kept is not None:
            self._catalogs.move_to_end(key)
            return kept[0]
        specs, size = _unpack_sized(result)
        catalog = _by_name(specs)
        self._catalogs[key] = (catalog, size)
        while len(self._catalogs) > 1 and (
            sum(kept_size for _, kept_size in self._catalogs.values()) > self._catalog_bytes
        ):
            _, (dropped, _) = self._catalogs.popitem(last=False)
            # The records that hold it go too: else they would keep it alive.
            for run, record in list(self._cache.items()):
                if record.catalog is dropped:
                    del self._cache[run]
        return catalog

    async def record(self, run_id: str, continued: int) -> RunRecord:
        """The record of run `run_id` (its current run: `continued` continue-as-news in).

        Raises:
            RPCError: the history could not be read.
            KeyError: its payloads are encrypted and this inbox has no keys.
        """
        key = (run_id, continued)
        found = self._cache.get(key)
        if found is None:
            found = await self._read(run_id)
            self._cache[key] = found
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        return found

    async def _decode(self, payload: Payload) -> Any:
        [value] = await self._tools.client.data_converter.decode([payload], [Any])
        return value

    async def _read(self, run_id: str) -> RunRecord:
        handle = self._tools.client.get_workflow_handle(run_id)
        start = RunRecord()
        scheduled: set[int] = set()
        seen = 0
        async for event in handle.fetch_history_events(page_size=100):
            seen += 1
            if seen > MAX_EVENTS:
                break
            result: Payload | None = None
            if event.HasField("workflow_execution_started_event_attributes"):
                payloads = event.workflow_execution_started_event_attributes.input.payloads
                started = await self._decode(payloads[0]) if payloads else None
                start = _started(started)
                carried = started.get("carried") if isinstance(started, dict) else None
                if isinstance(carried, dict):  # a continued run carries its catalog
                    packed = carried.get("catalog_packed")
                    catalog = (
                        self._catalog_of(packed) if packed else _by_name(carried.get("catalog"))
                    )
                    return RunRecord(start.prompt, start.identity, catalog)
            elif event.HasField("marker_recorded_event_attributes"):
                result = _catalog_marker(event.marker_recorded_event_attributes)
            elif event.HasField("activity_task_scheduled_event_attributes"):
                attributes = event.activity_task_scheduled_event_attributes
                if attributes.activity_type.name in _CATALOG_TYPES:
                    scheduled.add(event.event_id)
            elif event.HasField("activity_task_completed_event_attributes"):
                completed = event.activity_task_completed_event_attributes
                if completed.scheduled_event_id in scheduled and completed.result.payloads:
                    result = completed.result.payloads[0]
            if result is not None:
                catalog = self._catalog_of(await self._decode(result))
                return RunRecord(start.prompt, start.identity, catalog)
        return start


def _started(started: Any) -> RunRecord:
    """The prompt and identity of a run's input (JSON), as far as they read."""
    if not isinstance(started, dict):
        return RunRecord()
    prompt = started.get("prompt")
    try:
        identity = Identity.model_validate(started.get("identity") or {})
    except ValidationError:
        identity = Identity()
    return RunRecord(prompt if isinstance(prompt, str) else None, identity)


def _catalog_marker(marker: MarkerRecordedEventAttributes) -> Payload | None:
    """The result of a local catalog activity, if `marker` records one."""
    if marker.marker_name != _LOCAL_ACTIVITY_MARKER or "result" not in marker.details:
        return None
    try:
        data = json.loads(marker.details["data"].payloads[0].data)
    except (ValueError, IndexError, KeyError):
        return None
    if not isinstance(data, dict) or data.get("activity_type") not in _CATALOG_TYPES:
        return None
    payloads = marker.details["result"].payloads
    return payloads[0] if payloads else None
