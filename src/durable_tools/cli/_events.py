"""`durable-tools events RUN`: a run's audit stream, kept or followed into sinks."""

from __future__ import annotations

import argparse
import json

from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_tools.client.render._text import terminal_safe
from durable_tools.events import EventSink, MultiSink, follow_events, sink_from_spec
from durable_tools.workflows import RunEvent

from ._commands import run_of, tools_for
from ._output import echo

__all__ = ["cmd_events", "render_event"]


def render_event(event: RunEvent) -> str:
    """One line for an event: index, time, name, call, detail."""
    seq = f"#{event.seq} " if event.seq is not None else ""
    if event.subagent_run:  # a sub-agent's event in its parent's stream
        seq = f"[sub-agent {terminal_safe(event.subagent_run)}] {seq}"
    call = " ".join(part for part in (event.tool, event.call_id) if part) if event.call_id else ""
    call = f" {call}" if call else ""
    extra: list[str] = []
    if event.transport:
        extra.append(event.transport)
    if event.attempt is not None:
        extra.append(f"attempt {event.attempt}")
    if event.duration_ms is not None:
        extra.append(f"{event.duration_ms:.0f} ms")
    extra += [f"artifact {a.uri}" for a in event.artifacts]
    more = f" [{', '.join(extra)}]" if extra else ""
    detail = f": {terminal_safe(event.detail)}" if event.detail else ""
    return f"{seq}{event.at:%H:%M:%S} {event.event}{call}{more}{detail}"


class _Printer:
    """A sink that prints each event (one line, or one JSON object with `--json`)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def emit(self, run_id: str, event: RunEvent) -> None:
        if self.as_json:
            echo(json.dumps({"run_id": run_id, **event.model_dump(mode="json")}))
        else:
            echo(render_event(event))

    def close(self) -> None:
        return None


async def cmd_events(args: argparse.Namespace) -> int:
    """Print a run's kept events from `--from`, or follow them until the run ends."""
    tools = await tools_for(args)
    run = run_of(tools, args)
    sinks: list[EventSink] = [_Printer(args.json)]
    try:
        sinks += [sink_from_spec(spec) for spec in args.sink]
    except (ValueError, ImportError, OSError) as error:
        echo(f"error: {error}", err=True)
        return 2
    sink = MultiSink(sinks)
    try:
        result = await follow_events(
            run, sink, cursor=args.cursor, until_ended=args.follow, subagent=tools.run
        )
    except (WorkflowQueryFailedError, RPCError, TimeoutError) as error:
        echo(f"error: the events query got no answer ({error}); is a worker running?", err=True)
        return 1
    finally:
        sink.close()
    if result.missed:
        echo(f"note: {result.missed} events were no longer kept by the run", err=True)
    return 0
