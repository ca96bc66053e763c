"""The read side of `ToolRegistry`: lookups, the catalog a run may see, and search."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from ._catalog import IdentityIncomplete, filter_specs, missing_identity, search_specs
from ._context import Identity
from ._errors import ToolNotFound
from ._registered import RegisteredTool
from ._spec import LoadingMode, ToolSpec
from ._validation import parse_arguments

__all__ = ["RegistryCatalog"]


class RegistryCatalog:
    """Reading a registry's tools; `ToolRegistry` adds defining and running them."""

    require_full_identity: bool
    # Copy-on-write (see `ToolRegistry`): a reader takes one snapshot reference.
    _tools: dict[str, RegisteredTool]
    _aliases: dict[tuple[str, str], str]

    def get(self, name: str, *, provider: str | None = None) -> RegisteredTool:
        """A registered tool by name (or by its alias for `provider`).

        Raises:
            ToolNotFound: no such tool.
        """
        tools = self._tools
        found = tools.get(name)
        if found is None and provider is not None:
            canonical = self._aliases.get((provider, name))
            found = tools.get(canonical) if canonical else None
        if found is None:
            raise ToolNotFound(f"no tool named {name!r} is registered", details={"tool": name})
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(list(self._tools.values()))

    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def tools(self) -> list[RegisteredTool]:
        """Registered tools, in registration order."""
        return list(self._tools.values())

    def specs(self) -> list[ToolSpec]:
        """Every spec, unfiltered, in registration order."""
        return [tool.spec for tool in self._tools.values()]

    def catalog(
        self,
        *,
        identity: Identity | None = None,
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
            identity: Who the run acts for; tools whose `visible_to` rule rejects it are hidden.
            granted_scopes: The run's scopes; a tool needing any other scope is hidden.
                None grants none (fail closed).
            loading: Only tools of this loading mode.
            pattern: A glob over names.
            transport: Only tools reached this way (`function`, `mcp`, `http`, `sub-agent`).
            source: A glob over the tools' `source`.
            mime_type: Only tools handling this MIME type.
            tag: Only tools with this tag.

        Raises:
            IdentityIncomplete: the registry has `require_full_identity` and `identity`
                lacks a user, a tenant or a session.
        """
        if self.require_full_identity:
            missing = missing_identity(identity)
            if missing:
                raise IdentityIncomplete(
                    "this worker serves tools only to a full identity (user, tenant and "
                    f"session); missing: {', '.join(missing)}"
                )
        visible = [t.spec for t in self._tools.values() if t.is_visible_to(identity)]
        return filter_specs(
            visible,
            granted_scopes=granted_scopes,
            loading=loading,
            pattern=pattern,
            transport=transport,
            source=source,
            mime_type=mime_type,
            tag=tag,
        )

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        identity: Identity | None = None,
        granted_scopes: Collection[str] | None = None,
    ) -> list[ToolSpec]:
        """Deferred tools matching `query`, best first, among those the run may see."""
        candidates = self.catalog(
            identity=identity, granted_scopes=granted_scopes, loading=LoadingMode.DEFERRED
        )
        return search_specs(candidates, query, limit=limit)

    def requires_approval(self, name: str, args: Mapping[str, Any] | str) -> bool:
        """Whether a call of `name` with `args` needs a person's approval.

        Raises:
            ToolNotFound: no such tool.
            InvalidArguments: `args` is text that is not a JSON object.
        """
        tool = self.get(name)
        return tool.requires_approval(parse_arguments(args))
