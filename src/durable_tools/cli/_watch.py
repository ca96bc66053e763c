"""`durable-tools watch RUN`: follow `AgentRun.stream()` as it happens.

`cmd_watch` and `LivePrinter` print the model's text as it is generated, tool progress,
and the run's end. The status-polling watcher of `run --wait` and the demo is
`durable_tools.client.runs._watch.RunWatcher`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from temporalio.service import RPCError

from durable_tools.client import AgentRun
from durable_tools.client.render._text import terminal_safe
from durable_tools.client.runs._watch import (
    QUERY_TIMEOUT,
    RunWatcher,
    query_quietly,
    render_progress,
)
from durable_tools.streaming import StreamEvent

from ._errors import CliError, connect_or_explain

# The watcher moved to `durable_tools.client.runs._watch` (the demo uses it, and `demo` must not
# import `cli`); `_commands` still imports these four from here.
__all__ = [
    "QUERY_TIMEOUT",
    "LivePrinter",
    "RunWatcher",
    "cmd_watch",
    "query_quietly",
    "render_progress",
]


class LivePrinter:
    """Prints a run's live events: text inline as it comes, one line for everything else.

    Args:
        write: Where output goes (text without a newline added; flushed by the caller).
        as_json: One JSON object per event instead.
    """

    def __init__(self, write: Callable[[str], None], *, as_json: bool = False) -> None:
        self.write = write
        self.as_json = as_json
        self._mid_line = False

    def __call__(self, event: StreamEvent) -> None:
        """Print one event."""
        if self.as_json:
            self.write(json.dumps(event.model_dump(mode="json", exclude_defaults=True)) + "\n")
            return
        if event.kind == "text":
            self.write(terminal_safe(event.text, multiline=True))
            self._mid_line = not event.text.endswith("\n")
            return
        lines = {
            "message_start": f"[turn {event.turn}] ",
            "restarted": f"[turn {event.turn}: message restarted, attempt {event.attempt}]",
            "elided": "[... the rest of this message is not streamed]",
            "tool_progress": f"    {event.call_id} {event.tool}: {event.text}"
            + (f"  (sub-agent run {event.run_id})" if event.run_id else ""),
            "run_ended": f"status: {event.text}",
        }
        if event.kind == "message_end":
            if self._mid_line:
                self.write("\n")
            self._mid_line = False
            return
        line = lines.get(event.kind)
        if line is None:
            return
        if self._mid_line:
            self.write("\n")
        if event.kind == "message_start":
            self.write(terminal_safe(line))
            self._mid_line = True
        else:
            self.write(terminal_safe(line) + "\n")
            self._mid_line = False


async def cmd_watch(args: argparse.Namespace) -> int:
    """Follow a run live: the model's text as it is generated, tool progress, the end."""
    client = await connect_or_explain(flags=args)
    run = AgentRun(client, args.run_id)

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    printer = LivePrinter(write, as_json=args.json)
    status = ""
    try:
        async for event in run.stream():
            printer(event)
            if event.kind == "run_ended":
                status = event.text
    except RPCError as error:
        raise CliError(f"cannot follow run {args.run_id}: {error}") from None
    if status == "NOT_FOUND":
        raise CliError(f"no run with id {args.run_id!r}")
    return 0 if status == "COMPLETED" else 1
