"""The run and turn spans, opened from the worker's workflow interceptor.

A run span covers one workflow execution; a turn span opens when the workflow schedules
the model activity and closes when it schedules the next one (or the run ends), so the
model call and the tool calls it asked for are its children. Spans are not commands: they
leave the history untouched. Only a `ReplaySafeTracerProvider` is used here, which ends no
span while history replays, so a run resumed on another worker exports no span twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from temporalio import workflow

from durable_tools.telemetry._attributes import AGENT, RUN_ID, TURN
from durable_tools.telemetry._tracing import replay_safe_tracing, tracer

__all__ = ["RunSpans", "agent_name"]

try:
    from opentelemetry import baggage, context, trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Span
except ImportError:  # pragma: no cover - the `otel` extra is not installed
    pass


class RunSpans:
    """The spans of one workflow execution (one per workflow instance)."""

    def __init__(self) -> None:
        self._run: Context | None = None
        self._turn: Span | None = None

    @contextmanager
    def run(self, agent: str | None) -> Iterator[None]:
        """Open the run span for the block, when a replay-safe tracer is installed."""
        found = tracer()
        if found is None or not replay_safe_tracing():
            yield
            return
        info = workflow.info()
        # The agent's name travels as baggage, so activity spans on any worker can say it.
        token = context.attach(baggage.set_baggage(AGENT, agent)) if agent else None
        try:
            with found.start_as_current_span(
                "durable_tools.run",
                attributes={
                    AGENT: agent or "",
                    RUN_ID: info.workflow_id,
                    "temporal.run_id": info.run_id,
                },
            ):
                self._run = context.get_current()
                try:
                    yield
                finally:
                    self.end_turn()
                    self._run = None
        finally:
            if token is not None:
                context.detach(token)

    def next_turn(self, turn: int) -> None:
        """End the open turn span and open the next, current for everything scheduled after.

        The turn's context is attached and never detached: it must stay current in the
        workflow's main task (and the tool tasks it creates) until the next turn replaces it;
        the run span's own detach restores the context the run started with.
        """
        found = tracer()
        if self._run is None or found is None:
            return
        self.end_turn()
        self._turn = found.start_span(
            "durable_tools.turn",
            context=self._run,
            attributes={TURN: turn, RUN_ID: workflow.info().workflow_id},
        )
        context.attach(trace.set_span_in_context(self._turn, self._run))

    def end_turn(self) -> None:
        if self._turn is not None:
            self._turn.end()
            self._turn = None


def agent_name(args: Any) -> str | None:
    """The agent's name from the workflow's input (`AgentInput.config.name`), if it has one."""
    first = args[0] if args else None
    name = getattr(getattr(first, "config", None), "name", None)
    return name if isinstance(name, str) else None
