"""Identity-scoped standing grants: a JSON file on the worker, and the activities that use it.

A grant scoped to an identity outlives the run whose decision created it, so it cannot
live in workflow state: the workflow finds and saves grants through two activities, and
`durable-tools grants list|revoke` reads and edits the same file. Grants hold no secrets
(tool names, argument bounds, who and when), so the file is plain JSON, rewritten
atomically under a file lock.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter
from temporalio import activity

from durable_tools._file_lock import lock_file
from durable_tools.policy._grants import ToolBinding, find_grant
from durable_tools.protocol._policy_types import (
    GRANT_FIND_ACTIVITY,
    GRANT_SAVE_ACTIVITY,
    GrantLookup,
    StandingGrant,
)

__all__ = ["GrantStore", "grant_activities"]

_T = TypeVar("_T")
_GRANTS = TypeAdapter(list[StandingGrant])


def _default_path() -> Path:
    home = os.environ.get("DURABLE_TOOLS_HOME")
    root = Path(home).expanduser() if home else Path.home() / ".durable-tools"
    return root / "approval-grants.json"


class GrantStore:
    """Standing grants in one JSON file (default `DURABLE_TOOLS_HOME/approval-grants.json`)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else _default_path()
        self._lock = self.path.with_name(self.path.name + ".lock")

    async def all(self) -> list[StandingGrant]:
        """Every grant, revoked and expired ones included."""
        return await self._locked(lambda grants: list(grants))

    async def find(
        self,
        identity: str,
        tool: str,
        arguments: dict[str, Any],
        now: datetime | None = None,
        makers: Sequence[str] = (),
        binding: ToolBinding | None = None,
    ) -> StandingGrant | None:
        """The first live grant of `identity` covering this call of the tool `binding`
        describes, made by one of `makers` (empty: anyone), or None. An empty `identity`
        has no grants. Without `binding`, grants cover by name (an operator's question);
        a run's look-up always passes the tool it calls (`UNBOUND` when its code sent
        none: then only grants that bind no tool cover it)."""
        if not identity:
            return None
        when = now or datetime.now(UTC)
        grants = await self.all()
        mine = [g for g in grants if g.identity == identity]
        return find_grant(mine, tool, arguments, when, makers, binding)

    async def save(self, grant: StandingGrant) -> None:
        """Add `grant`, or replace the one with its id (saving twice is harmless)."""

        def change(grants: list[StandingGrant]) -> None:
            grants[:] = [g for g in grants if g.grant_id != grant.grant_id] + [grant]

        await self._locked(change, write=True)

    async def revoke(self, grant_id: str, revoked_by: str) -> StandingGrant:
        """Mark a grant revoked (kept, for the audit). Raises KeyError for an unknown id."""

        def change(grants: list[StandingGrant]) -> StandingGrant:
            for index, grant in enumerate(grants):
                if grant.grant_id == grant_id:
                    if grant.revoked_at is None:
                        grants[index] = grant.model_copy(
                            update={"revoked_at": datetime.now(UTC), "revoked_by": revoked_by}
                        )
                    return grants[index]
            raise KeyError(grant_id)

        return await self._locked(change, write=True)

    async def _locked(self, use: Callable[[list[StandingGrant]], _T], *, write: bool = False) -> _T:
        async with lock_file(self._lock):
            grants = self._load()
            result = use(grants)
            if write:
                self._save(grants)
            return result

    def _load(self) -> list[StandingGrant]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        return _GRANTS.validate_json(text)

    def _save(self, grants: list[StandingGrant]) -> None:
        data = _GRANTS.dump_json(grants, indent=1)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def grant_activities(store: GrantStore) -> list[Callable[..., Any]]:
    """The `find` and `save` activities over `store`."""

    @activity.defn(name=GRANT_FIND_ACTIVITY)
    async def find(lookup: GrantLookup) -> StandingGrant | None:
        binding = ToolBinding(lookup.tool_schema, lookup.tool_safety)
        return await store.find(
            lookup.identity, lookup.tool, lookup.arguments, makers=lookup.makers, binding=binding
        )

    @activity.defn(name=GRANT_SAVE_ACTIVITY)
    async def save(grant: StandingGrant) -> None:
        await store.save(grant)

    return [find, save]
