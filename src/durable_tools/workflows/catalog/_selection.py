"""Per-turn tool selection: a function of the run's state that chooses, before each model
turn, which of the tools the run would offer the model is offered this turn (what
Pydantic AI calls `prepare_tools`).

A selector runs in workflow code, so it must be deterministic: decide from the
`ToolSelection` it is given (turn, messages, tools, identity) and nothing else (no clock,
no randomness, no I/O). A worker registers selectors by name
(`build_worker(tool_selectors={"name": fn})`, or `DurableToolsPlugin`); a run names one in
`AgentConfig.tool_selector`. The calls of a turn are checked against that turn's selection:
a call of a tool the model was not offered is refused with a repair message, as any
unknown tool is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from durable_tools.messages import Message
from durable_tools.protocol._types import RunStatus
from durable_tools.tools import Identity, ToolSpec
from durable_tools.workflows.run._state import EndRun, RunState

__all__ = [
    "MAX_SELECTED_NAME_CHARS",
    "ToolSelection",
    "ToolSelector",
    "check_selectors",
    "select_tools",
]

MAX_SELECTED_NAME_CHARS = 256
"""Longest name a selector may return (longer ones are not tool names: the run fails)."""


@dataclass(frozen=True)
class ToolSelection:
    """What a selector decides from: the run's state before one model turn."""

    turn: int
    """The model turn about to be taken, from 1."""
    tools: Mapping[str, ToolSpec]
    """The tools the run would offer this turn (its catalog's advertised tools), by name."""
    messages: Sequence[Message]
    """The conversation so far (do not change it)."""
    identity: Identity
    """Who the run acts for."""
    tool_calls: int
    """Tool calls made so far in the run."""


ToolSelector = Callable[[ToolSelection], Iterable[str]]
"""Chooses the names of the tools a model turn is offered, among `ToolSelection.tools`;
names of other tools are ignored. Runs in workflow code: must be deterministic."""


def check_selectors(selectors: Mapping[str, ToolSelector]) -> dict[str, ToolSelector]:
    """The selectors a worker was given, checked at the worker's start.

    Raises:
        TypeError: a name that is not a non-empty string, or a selector not callable.
    """
    checked: dict[str, ToolSelector] = {}
    for name, selector in selectors.items():
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"tool_selectors: {name!r} is not a name (a non-empty string)")
        if not callable(selector):
            raise TypeError(f"tool_selectors[{name!r}] is not callable: {selector!r}")
        checked[name] = selector
    return checked


def select_tools(state: RunState, tools: dict[str, ToolSpec]) -> dict[str, ToolSpec]:
    """The tools this model turn is offered: `tools`, narrowed by the run's selector.

    The choice is kept in the run's catalog state, so the turn's calls are checked against
    the tools the model was shown (`_view.offered_tools`).

    Raises:
        EndRun: the run names a selector the worker does not have, or the selector raised
            or returned something that is not names (the reason says which and why).
    """
    name = state.config.tool_selector
    if name is None:
        return tools
    selector = state.tool_selectors.get(name)
    if selector is None:
        known = ", ".join(sorted(state.tool_selectors)) or "none"
        raise EndRun(
            RunStatus.FAILED,
            f"tool selector {name!r} is not registered on this worker (registered: {known}); "
            "give it to build_worker(tool_selectors={...}) or DurableToolsPlugin",
        )
    view = ToolSelection(
        turn=state.turn + 1,
        tools=dict(tools),
        messages=tuple(state.conversation),
        identity=state.input.identity,
        tool_calls=state.tool_calls,
    )
    try:
        chosen = selector(view)
        if isinstance(chosen, str):
            raise TypeError("it returned a string, not names (wrap one name in a list)")
        names = set()
        for item in chosen:
            if not isinstance(item, str) or len(item) > MAX_SELECTED_NAME_CHARS:
                raise TypeError(f"it returned {type(item).__name__} {str(item)[:80]!r}, not a name")
            names.add(item)
    except Exception as error:  # user code: any failure ends the run, named
        raise EndRun(
            RunStatus.FAILED,
            f"tool selector {name!r} failed before turn {view.turn}: "
            f"{type(error).__name__}: {str(error)[:500]}",
        ) from None
    selected = {n: spec for n, spec in tools.items() if n in names}
    chosen = frozenset(selected)
    if chosen != state.catalog.selected:
        # Definitions stored for another selection must not be sent by reference.
        state.catalog.advertised_changes += 1
        state.catalog.selected = chosen
    return selected
