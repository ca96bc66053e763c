"""`python -m bench.route`: how many times the route of one tool call changes file.

Replays a recorded run with one approval call (`tests/workflows/histories/approvals.json`:
the model asks for `transfer`, a person approves, the tool runs, the model answers) and
follows the workflow code from `run_calls` (the model's response reaches the call
pipeline) to the next `call_model` (the next model turn). It counts every change of
source file between consecutive durable-tools function calls on that route, and the
modules it passes through: a newcomer reading the route follows these changes.

Replay runs the real workflow code in-process and deterministically (no server), so the
count is the same on every machine.

Then the client side (unless `--no-decide`): the decide path of one approval from the
command line (`durable-tools approve RUN CALL --hash H`, from `cmd_decide`) and from the
inbox's API (`POST /api/runs/RUN/calls/CALL/decide`, from `api_decide`), traced the same
way on a dev server of its own with a real worker and a run waiting for approval.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable
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

    def __init__(self, start: str = "run_calls", stop: str = "call_model") -> None:
        self.files: list[str] = []
        self.jumps: list[tuple[str, str]] = []
        self.state = "before"  # before -> on_route -> done
        self.lock = threading.Lock()
        self.start = start
        self.stop = stop

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or self.state == "done":
            return
        path = frame.f_code.co_filename
        if not path.startswith(PACKAGE):
            return
        name = frame.f_code.co_name
        with self.lock:
            if self.state == "before" and name == self.start:
                self.state = "on_route"
            elif self.state == "on_route" and name == self.stop:
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


def _traced(trace: RouteTrace, work: Callable[[], Any]) -> Any:
    """Run `work` in this thread with `trace` watching it (and only it)."""
    sys.setprofile(trace.profile)
    try:
        return work()
    finally:
        sys.setprofile(None)


async def trace_decide_paths() -> tuple[RouteTrace, RouteTrace]:
    """The decide path of one approval from the CLI and from the inbox's API, each traced
    in a thread of its own while this one runs the worker."""
    import httpx

    from bench._common import free_port
    from durable_tools import AgentConfig, DurableTools, ToolRegistry, build_worker, connect
    from durable_tools.cli import main as cli_main
    from durable_tools.inbox import AuthConfig, InboxConfig, TokenStore, add_token, create_app
    from durable_tools.server import DevServer

    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def pay(amount_cents: int) -> str:
        """Pay an amount (needs approval)."""
        return f"paid {amount_cents}"

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        server = DevServer(work / "server", port=free_port(), headless=True)
        client = await server.start()
        queue = f"route-{uuid.uuid4().hex[:8]}"
        script = work / "script.json"
        script.write_text(
            '{"steps": [{"tool_calls": [{"id": "c1", "name": "pay", "arguments": '
            '{"amount_cents": 5}}]}, {"text": "paid"}]}'
        )
        tokens = work / "tokens.json"
        token = add_token(tokens, "alice")
        try:
            async with build_worker(client, registry, task_queue=queue):
                tools = DurableTools(client, queue)

                async def waiting() -> tuple[str, str]:
                    run = await tools.start("pay", config=AgentConfig(model=f"scripted:{script}"))
                    for _ in range(300):
                        pending = (await run.status()).pending_approvals
                        if pending:
                            return run.run_id, pending[0].arguments_hash
                        await asyncio.sleep(0.05)
                    raise SystemExit("the run never waited for approval")

                run_id, digest = await waiting()
                cli_trace = RouteTrace("cmd_decide", "<none>")
                argv = ["approve", run_id, "c1", "--hash", digest, "--as", "alice"]
                argv += ["--address", server.address]
                code = await asyncio.to_thread(_traced, cli_trace, lambda: cli_main(argv))
                if code != 0:
                    raise SystemExit(f"the CLI's approve failed ({code})")

                run_id, digest = await waiting()

                async def through_inbox() -> None:
                    own = await connect(server.address)
                    config = InboxConfig(
                        auth=AuthConfig(TokenStore(tokens)), session_secret="s" * 32
                    )
                    app = create_app(DurableTools(own, queue), config)
                    transport = httpx.ASGITransport(app=app)
                    async with httpx.AsyncClient(transport=transport, base_url="http://x") as web:
                        answer = await web.post(
                            f"/api/runs/{run_id}/calls/c1/decide",
                            json={"approve": True, "arguments_hash": digest},
                            headers={"Authorization": f"Bearer {token}"},
                        )
                    if answer.status_code != 200:
                        raise SystemExit(f"the inbox's decide failed: {answer.text}")

                inbox_trace = RouteTrace("api_decide", "<none>")
                await asyncio.to_thread(_traced, inbox_trace, lambda: asyncio.run(through_inbox()))
        finally:
            await server.stop()
    return cli_trace, inbox_trace


def report(title: str, trace: RouteTrace, *, pairs: bool = False) -> None:
    changes = sum(1 for a, b in zip(trace.files, trace.files[1:], strict=False) if a != b)
    modules = sorted(set(trace.files))
    print(f"{title}: {changes} file changes across {len(modules)} modules")
    # What a reader follows: each place the code calls into another file, counted once.
    print(
        f"calls into another file: {len(trace.jumps)}, "
        f"{len(set(trace.jumps))} distinct (caller file -> callee file)"
    )
    for module in modules:
        print(f"  {module}: {trace.files.count(module)} calls")
    if pairs:
        print("distinct calls into another file (times taken):")
        for caller, callee in sorted(set(trace.jumps)):
            print(f"  {caller} -> {callee} ({trace.jumps.count((caller, callee))})")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.route", description=__doc__)
    parser.add_argument(
        "--no-decide",
        action="store_true",
        help="only the workflow route (no dev server for the decide paths)",
    )
    parser.add_argument(
        "--pairs",
        action="store_true",
        help="also list each distinct (caller file -> callee file) call",
    )
    args = parser.parse_args()
    report("route of one approval call", asyncio.run(trace_route()), pairs=args.pairs)
    if not args.no_decide:
        cli_trace, inbox_trace = asyncio.run(trace_decide_paths())
        report("decide path from the CLI (cmd_decide)", cli_trace, pairs=args.pairs)
        report("decide path from the inbox (api_decide)", inbox_trace, pairs=args.pairs)


if __name__ == "__main__":
    main()
