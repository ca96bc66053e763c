"""What a run's model is offered now: the advertised tools, the selection of this turn,
and the deferred ones.

Read by the model turn (which tools to send), the call pipeline (which calls are valid in
this turn: `offered_tools`) and `search_tools` (what there is to find).
"""

from __future__ import annotations

from durable_tools.tools import LoadingMode, ToolSpec
from durable_tools.workflows.run._state import RunState

__all__ = ["advertised", "deferred_tools", "has_deferred", "offered_tools"]


def advertised(state: RunState) -> dict[str, ToolSpec]:
    """The tools the model may call now, by name, in catalog order.

    Runs with a packed catalog advertise at most `max_advertised` of their always-loaded
    tools up front (the first in catalog order; the rest are deferred) and the latest
    `max_advertised` tools found by search.
    """
    limit = state.catalog.max_advertised
    if limit is None:
        return {
            spec.name: spec
            for spec in state.catalog.specs
            if (spec.loading == LoadingMode.ALWAYS or spec.name in state.catalog.discovered)
            and (spec.subagent is None or state.depth < state.max_depth)
        }
    upfront = {spec.name for spec in _upfront(state, limit)}
    found = set(state.catalog.discovered[-limit:])
    return {
        spec.name: spec for spec in _usable(state) if spec.name in upfront or spec.name in found
    }


def offered_tools(state: RunState) -> dict[str, ToolSpec]:
    """The tools this turn offers the model, by name: the advertised ones, narrowed to the
    last turn's selection (`_selection.select_tools`; all of them without a selector).

    A turn's calls are checked against it: a tool found by search in this turn becomes
    callable from the next one, and a tool the selector left out is unknown.
    """
    tools = advertised(state)
    chosen = state.catalog.selected
    if state.config.tool_selector is None or chosen is None:
        return tools
    return {n: spec for n, spec in tools.items() if n in chosen}


def deferred_tools(state: RunState) -> list[ToolSpec]:
    """The tools found only through `search_tools` (found ones included), in catalog order."""
    limit = state.catalog.max_advertised
    if limit is None:
        return [spec for spec in state.catalog.specs if spec.loading == LoadingMode.DEFERRED]
    upfront = {spec.name for spec in _upfront(state, limit)}
    return [spec for spec in _usable(state) if spec.name not in upfront]


def has_deferred(state: RunState) -> bool:
    """Whether some tools are found only through `search_tools`."""
    if state.catalog.max_advertised is None:
        return any(spec.loading == LoadingMode.DEFERRED for spec in state.catalog.specs)
    return bool(deferred_tools(state))


def _usable(state: RunState) -> list[ToolSpec]:
    """The catalog without sub-agent tools this run is too deep to call."""
    return [s for s in state.catalog.specs if s.subagent is None or state.depth < state.max_depth]


def _upfront(state: RunState, limit: int) -> list[ToolSpec]:
    return [s for s in _usable(state) if s.loading == LoadingMode.ALWAYS][:limit]
