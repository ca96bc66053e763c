"""`python -m bench.route`: how many times the route of one tool call changes file.

Replays a recorded run with one approval call (`tests/workflows/histories/approvals.json`:
the model asks for `transfer`, a person approves, the tool runs, the model answers) and
follows the workflow code from `run_calls` (the model's response reaches the call
pipeline) to the next `call_model` (the next model turn). It counts every change of
source file between consecutive durable-tools function calls on that route, and the
modules it passes through: a newcomer reading the route follows these changes.

Replay runs the real workflow code in-process and deterministically (no server), so the
count is the same on every machine.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

import durable_tools
from durable_tools.worker import workflow_runner
from durable_tools.workflows import AgentWorkflow

HISTORY = Path(__file__).resolve().parent.parent / "tests/workflows/histories/approvals.json"
PACKAGE = str(Path(durable_tools.__file__).resolve().parent)


class RouteTrace:
    """Collects the durable-tools files entered between `run_calls` and `call_model`, and
    each call from one file into another (caller file, callee file)."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.jumps: list[tuple[str, str]] = []
        self.state = "before"  # before -> on_route -> done
        self.lock = threading.Lock()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or self.state == "done":
            return
        path = frame.f_code.co_filename
        if not path.startswith(PACKAGE):
            return
        name = frame.f_code.co_name
        with self.lock:
            if self.state == "before" and name == "run_calls":
                self.state = "on_route"
            elif self.state == "on_route" and name == "call_model":
                self.state = "done"
                return
            if self.state == "on_route":
                callee = path[len(PACKAGE) + 1 :]
                self.files.append(callee)
                caller = frame.f_back.f_code.co_filename if frame.f_back else ""
                if caller.startswith(PACKAGE) and caller != path:
                    self.jumps.append((caller[len(PACKAGE) + 1 :], callee))


async def trace_route() -> RouteTrace:
    trace = RouteTrace()
    history = WorkflowHistory.from_json("approvals", HISTORY.read_text())
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(strict=False),
    )
    threading.setprofile(trace.profile)
    sys.setprofile(trace.profile)
    try:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    if result.replay_failure is not None:
        raise SystemExit(f"replay failed: {result.replay_failure}")
    return trace


def main() -> None:
    trace = asyncio.run(trace_route())
    changes = sum(1 for a, b in zip(trace.files, trace.files[1:], strict=False) if a != b)
    modules = sorted(set(trace.files))
    print(f"route of one approval call: {changes} file changes across {len(modules)} modules")
    # What a reader follows: each place the code calls into another file, counted once.
    print(
        f"calls into another file: {len(trace.jumps)}, "
        f"{len(set(trace.jumps))} distinct (caller file -> callee file)"
    )
    for module in modules:
        print(f"  {module}: {trace.files.count(module)} calls")


if __name__ == "__main__":
    main()
