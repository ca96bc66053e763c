"""The OpenAPI, HTTP and A2A sources as `ToolProvider`s, and the refresher that re-reads them.

Each adapter runs its source's own attach function (`attach_openapi`, `http_tool`,
`attach_a2a`) into a scratch `RecordingRegistry` and hands back what it registered as
`Discovered` tools: one discovery code path per source, whether read at start or again.
`ProviderRefresher` reads providers at worker start (`attach`), again every `every`
seconds while the worker runs, and whenever `refresh()` is called; `apply_discovery`
brings the registry in line, and running runs see the change before their next model
turn (docs/tools.md, "Changing tools while runs wait").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from durable_tools.tools import ToolRegistry

from ._a2a import A2AMode, _agent, _register, fetch_card
from ._http import http_tool
from ._openapi import LoadedDocument, plan_operations
from ._openapi_load import load_openapi
from ._provider import (
    CatalogChange,
    Discovered,
    RecordingRegistry,
    ToolProvider,
    apply_discovery,
    recorded_discovery,
)

__all__ = [
    "MIN_REFRESH_EVERY",
    "A2AProvider",
    "HttpProvider",
    "OpenApiProvider",
    "ProviderRefresher",
]

logger = logging.getLogger("durable_tools.sources")

MIN_REFRESH_EVERY = 1.0
"""Fewest seconds between two scheduled reads of the same sources: a refresh reads every
document and card again, so it cannot be asked for in a busy loop."""


def _where(document: object) -> str:
    """How messages name a document: a URL without user info or query (they may hold
    tokens), a path, or "(a parsed document)"."""
    if isinstance(document, str) and document.startswith(("http://", "https://")):
        url = httpx.URL(document)
        return f"{url.scheme}://{url.host}{f':{url.port}' if url.port else ''}{url.path}"
    if isinstance(document, (str, Path)):
        return str(document)
    return "(a parsed document)"


@dataclass(frozen=True)
class _LastRead:
    """What one read of a document found, to keep what the next read finds unchanged."""

    registry: weakref.ref[ToolRegistry]
    digest: str
    found: list[Discovered]
    by_key: dict[str, Discovered]
    """Each operation's tool by its `PlannedOperation.key`."""


class OpenApiProvider:
    """An OpenAPI document as a `ToolProvider`: `attach_openapi`, read again when asked.

    Takes `attach_openapi`'s arguments. Each read fetches the document again (in a thread:
    the loader is synchronous), so a changed operation replaces its tool, a new one is
    added and a dropped one withdrawn. Building a tool is what costs (its schema is
    checked): a read of a document that did not change builds nothing, and a read of one
    that did builds only the operations that changed (those whose path item, or the
    components and settings all operations share, changed).
    """

    def __init__(self, document: str | Path | Any, **options: Any) -> None:
        self.document = document
        self._options = options
        where = _where(document)
        self.owner = f"openapi:{where}|{options.get('prefix') or ''}"
        self.label = f"OpenAPI document {where}"
        self._last: _LastRead | None = None

    async def connect(self) -> None:
        """Nothing to open: every read fetches the document."""

    async def discover(self, registry: ToolRegistry) -> list[Discovered]:
        """Read the document and build its tools (not yet registered)."""
        return await asyncio.to_thread(self._read, registry)

    def _read(self, registry: ToolRegistry) -> list[Discovered]:
        options = dict(self._options)
        timeout = options.pop("fetch_timeout", 30.0)
        loaded = LoadedDocument(*load_openapi(self.document, timeout=timeout))
        digest = loaded.digest()
        last = self._last
        kept: dict[str, Discovered] = {}
        if last is not None and last.registry() is registry:
            if last.digest == digest:
                return list(last.found)
            kept = last.by_key
        recording = RecordingRegistry(registry)
        # Per operation: the tool kept from the last read, or the index of the one built now.
        order: list[tuple[str, Discovered | int]] = []
        for planned in plan_operations(recording, loaded, **options):
            if planned.key in kept:
                order.append((planned.key, kept[planned.key]))
            elif planned.register() is not None:
                order.append((planned.key, len(recording.calls) - 1))
        built = recorded_discovery(registry, recording)
        by_key = {key: built[at] if isinstance(at, int) else at for key, at in order}
        found = list(by_key.values())
        self._last = _LastRead(weakref.ref(registry), digest, found, by_key)
        return list(found)

    async def close(self) -> None:
        """Nothing to close: requests go through the shared HTTP clients."""


class HttpProvider:
    """One HTTP endpoint as a `ToolProvider` (`http_tool`'s arguments): a fixed tool, so
    reading it again changes nothing; it is here so every source has one interface."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self.owner = f"http:{options.get('name')}"
        self.label = f"HTTP tool {options.get('name')}"

    async def connect(self) -> None:
        """Nothing to open."""

    async def discover(self, registry: ToolRegistry) -> list[Discovered]:
        """The endpoint's one tool."""
        recording = RecordingRegistry(registry)
        http_tool(recording, **self._options)
        return recorded_discovery(registry, recording)

    async def close(self) -> None:
        """Nothing to close."""


class A2AProvider:
    """A remote A2A agent as a `ToolProvider`: its card, read again when asked.

    Takes `attach_a2a`'s arguments. A skill added to the card becomes a tool, a changed
    skill (or a card that moved the agent elsewhere) replaces its tool, a skill dropped
    is withdrawn.
    """

    def __init__(
        self,
        card_url: str,
        *,
        prefix: str | None = None,
        mode: A2AMode = "skills",
        card_headers: dict[str, str] | None = None,
        request_timeout: float = 60.0,
        **options: Any,
    ) -> None:
        self.card_url = card_url
        self._prefix = prefix
        self._mode: A2AMode = mode
        self._card_headers = card_headers
        self._request_timeout = request_timeout
        self._agent_options = {
            k: options.pop(k)
            for k in ("auth", "streaming", "poll_interval", "client")
            if k in options
        }
        self._register_options = {
            k: options.pop(k) for k in ("include", "exclude", "per_skill") if k in options
        }
        self._defaults = options
        where = _where(card_url)
        self.owner = f"a2a:{where}|{prefix or ''}|{mode}"
        self.label = f"A2A agent at {where}"

    async def connect(self) -> None:
        """Nothing to open: every read fetches the card."""

    async def discover(self, registry: ToolRegistry) -> list[Discovered]:
        """Read the card and build the agent's tools (not yet registered)."""
        card = await fetch_card(
            self.card_url, headers=self._card_headers, timeout=self._request_timeout
        )
        agent = _agent(
            card,
            self._agent_options.get("auth"),
            streaming=self._agent_options.get("streaming", True),
            poll_interval=self._agent_options.get("poll_interval", 1.0),
            request_timeout=self._request_timeout,
            client=self._agent_options.get("client"),
        )
        recording = RecordingRegistry(registry)
        _register(
            recording,
            card,
            agent,
            prefix=self._prefix,
            mode=self._mode,
            include=self._register_options.get("include"),
            exclude=self._register_options.get("exclude"),
            per_skill=self._register_options.get("per_skill"),
            defaults=dict(self._defaults),
        )
        # Where calls go is the card's, not the spec's: a moved agent is a changed tool.
        endpoint = getattr(card, "url", None), getattr(card, "preferred_transport", None)
        return recorded_discovery(registry, recording, endpoint)

    async def close(self) -> None:
        """Nothing to close."""


class ProviderRefresher:
    """Reads tool providers into a registry: at start, on a schedule and on demand.

    Use it around the worker: `await refresher.attach()` before the worker is built (the
    first read: errors raise, as `attach_*` do), then `async with refresher:` (or
    `start()`/`aclose()`) while the worker runs. A read that fails keeps the tools the
    provider registered before and logs why (`errors` keeps the last message per source).

    Args:
        registry: Where the tools go.
        providers: The sources.
        every: Seconds between scheduled reads (at least `MIN_REFRESH_EVERY`); None: only
            on demand (`refresh()`).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        providers: Sequence[ToolProvider],
        *,
        every: float | None = None,
    ) -> None:
        if every is not None and not (
            isinstance(every, (int, float)) and math.isfinite(every) and every >= MIN_REFRESH_EVERY
        ):
            raise ValueError(
                f"every must be a finite number of seconds, at least {MIN_REFRESH_EVERY} "
                f"(MIN_REFRESH_EVERY), or None; got {every!r}"
            )
        self.registry = registry
        self.providers = list(providers)
        self.every = every
        self.errors: dict[str, str] = {}
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._entered = 0

    async def attach(self) -> CatalogChange:
        """Connect every provider and register its tools (the first read).

        Raises:
            Exception: a source cannot be read or a tool cannot be registered.
        """
        total = CatalogChange()
        async with self._lock:
            for provider in self.providers:
                await provider.connect()
                found = await provider.discover(self.registry)
                change = apply_discovery(
                    self.registry, provider.owner, provider.label, found, initial=True
                )
                total.added += change.added
                total.registered += change.registered
        return total

    async def refresh(self) -> dict[str, CatalogChange]:
        """Read every provider again and apply what changed; by source label.

        A source that cannot be read keeps its tools; its change is empty and `errors`
        says why.
        """
        changes: dict[str, CatalogChange] = {}
        async with self._lock:
            for provider in self.providers:
                try:
                    found = await provider.discover(self.registry)
                except Exception as error:  # a source down must not take tools away
                    message = f"{type(error).__name__}: {error}"
                    self.errors[provider.label] = message
                    logger.warning(
                        "reading %s failed; its tools stay as they were: %s",
                        provider.label,
                        message,
                    )
                    changes[provider.label] = CatalogChange()
                    continue
                self.errors.pop(provider.label, None)
                change = apply_discovery(
                    self.registry, provider.owner, provider.label, found, initial=False
                )
                if change:
                    logger.info(
                        "%s: added %s, changed %s, removed %s",
                        provider.label,
                        change.added or "none",
                        change.changed or "none",
                        change.removed or "none",
                    )
                changes[provider.label] = change
        return changes

    def start(self) -> None:
        """Start the scheduled reads (a task on the running loop); no-op without `every`."""
        if self.every is None or (self._task is not None and not self._task.done()):
            return
        self._task = asyncio.get_running_loop().create_task(
            self._scheduled(self.every), name="durable-tools:provider-refresh"
        )

    async def _scheduled(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.refresh()
            except Exception:  # a bug in one read must not end the schedule
                logger.exception("refreshing tool providers failed")

    async def aclose(self) -> None:
        """Stop the scheduled reads and close every provider."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for provider in self.providers:
            try:
                await provider.close()
            except Exception as error:
                logger.warning("closing %s failed: %s", provider.label, error)

    async def __aenter__(self) -> ProviderRefresher:
        self._entered += 1
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._entered -= 1
        if self._entered == 0:
            await self.aclose()
