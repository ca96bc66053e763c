"""The demo flow: a server, a worker and a scripted agent run with an approval in the middle.

1. `ensure_server()`: use the Temporal server at `TEMPORAL_ADDRESS`, else start the embedded
   dev server (state under `DURABLE_TOOLS_HOME`, default `~/.durable-tools`).
2. Start a worker in this process for `durable_tools.demo.tools:registry`.
3. Start a run of a scripted model: look an order up; then, in parallel, export a ~200 KB
   report (kept in the artifact store, the model sees a summary and a reference) and issue
   a refund that a person must approve; then answer.
4. Follow the run, ask for the approval (or approve automatically), print the timeline.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from importlib import resources
from pathlib import Path

from durable_tools.client import AgentRun, DurableTools
from durable_tools.client.render._text import clip, render_approval, render_timeline
from durable_tools.client.runs._watch import ApprovalHandler, RunWatcher
from durable_tools.connection import resolve_address
from durable_tools.server import DevServer, default_data_dir, ensure_server, ui_url
from durable_tools.tools._artifacts import ARTIFACTS_ENV, FileSystemArtifactStore
from durable_tools.worker import build_worker
from durable_tools.workflows import AgentConfig, ExecutionStrategy, PendingApproval

from .tools import registry

__all__ = ["DEMO_TASK_QUEUE", "PROMPT", "demo_config", "run_demo", "script_path"]

DEMO_TASK_QUEUE = "durable-tools-demo"
"""The task queue of the demo's runs and of its in-process worker."""

PROMPT = "Order A-1001 arrived damaged. Refund it and send me the customer's order report."

INSTRUCTIONS = (
    "You are a support agent. Look orders up before acting; refunds need a person's approval."
)


def script_path() -> Path:
    """The packaged script of the demo's model (`durable_tools/demo/script.json`)."""
    ref = resources.files(__package__ or "durable_tools.demo") / "script.json"
    return Path(str(ref))


def demo_config(model: str) -> AgentConfig:
    """The demo agent: three tools, their calls of one turn run in parallel."""
    return AgentConfig(
        name="refund-desk",
        model=model,
        instructions=INSTRUCTIONS,
        tools=[spec.name for spec in registry.specs()],
        strategy=ExecutionStrategy(mode="parallel", concurrency=4),
    )


async def _ask(prompt: str) -> str:
    """`input()` in a daemon thread, so the worker on this event loop keeps running and an
    interrupted prompt never keeps the process alive."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        try:
            line = input(prompt)
        except (EOFError, OSError):
            line = ""
        loop.call_soon_threadsafe(_settle, answer, line)

    threading.Thread(target=read, name="demo-prompt", daemon=True).start()
    return await answer


def _settle(future: asyncio.Future[str], value: str) -> None:
    if not future.done():
        future.set_result(value)


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "demo-user"


def _approval_question(approval: PendingApproval) -> str:
    args = approval.arguments
    amount = args.get("amount_cents")
    if approval.tool == "issue_refund" and isinstance(amount, int):
        return f"Approve refund of ${amount / 100:.2f} on order {args.get('order_id')}? [y/N] "
    return f"Approve {approval.tool} (call {approval.call_id})? [y/N] "


def _approver(out: Callable[[str], None], auto: bool, why: str) -> ApprovalHandler:
    async def decide(run: AgentRun, approval: PendingApproval) -> None:
        out("  " + render_approval(run.run_id, approval, commands=False).replace("\n", "\n  "))
        if auto:
            verdict = await run.approve(
                approval.call_id,
                decider="demo-auto-approve",
                reason=f"approved automatically ({why})",
                arguments_hash=approval.arguments_hash,
            )
            out(f"  -> {verdict} automatically ({why})")
            return
        yes = (await _ask("  " + _approval_question(approval))).strip().lower() in ("y", "yes")
        reason = (await _ask("  Reason (optional): ")).strip() or None
        verdict = await run.decide(
            approval.call_id,
            approve=yes,
            decider=_who(),
            reason=reason,
            arguments_hash=approval.arguments_hash,
        )
        out(f"  -> {verdict} by {_who()}")

    return decide


async def run_demo(
    *,
    auto_approve: bool = False,
    keep_server: bool = False,
    out: Callable[[str], None] = print,
    interactive: bool | None = None,
) -> int:
    """Run the whole demo; 0 when the run completed.

    Args:
        auto_approve: Approve the refund without asking.
        keep_server: Start the dev server (if this call starts one) detached, and leave it
            running afterwards (to browse the UI).
        out: Where lines go.
        interactive: Ask on the terminal; default: when stdin is a terminal.
    """
    began = time.monotonic()
    if interactive is None:
        interactive = sys.stdin.isatty()
    if auto_approve:
        auto, why = True, "--auto-approve"
    elif not interactive:
        auto, why = True, "stdin is not a terminal"
    else:
        auto, why = False, ""

    address = resolve_address()
    out(f"Temporal: looking for a server at {address} ...")
    # Kept: detached from this process's life, so the printed UI link outlives the demo.
    client, server = await ensure_server(address, detached=keep_server)
    if server is not None:
        out(f"Temporal: started the embedded dev server at {server.address}")
        out(f"          its state: {server.data_dir}")
    else:
        out(f"Temporal: using the server that answers at {address}")
    artifacts = Path(os.environ.get(ARTIFACTS_ENV) or default_data_dir() / "artifacts")
    ok = False
    try:
        async with AsyncExitStack() as stack:
            worker = build_worker(
                client,
                registry,
                task_queue=DEMO_TASK_QUEUE,
                artifact_store=FileSystemArtifactStore(artifacts),
            )
            await stack.enter_async_context(worker)
            out(f"Worker: running {len(registry.specs())} tools on task queue {DEMO_TASK_QUEUE}")
            path = stack.enter_context(resources.as_file(script_path()))
            tools = DurableTools(client, DEMO_TASK_QUEUE)
            run = await tools.start(
                PROMPT,
                config=demo_config(f"scripted:{path}"),
                run_id=f"demo-{uuid.uuid4().hex[:10]}",
            )
            link = (
                server.ui_url(run.run_id)
                if server is not None and server.ui_base is not None
                else ui_url(client.namespace, run.run_id, address=address)
            )
            out(f"Run: {run.run_id}")
            out(f"UI:  {link}")
            out(f'Prompt: "{PROMPT}"')
            if auto:
                out(f"Approvals: automatic ({why})")
            watcher = RunWatcher(
                run,
                out=out,
                interval=0.2,
                on_approval=_approver(out, auto, why),
                task_queue=DEMO_TASK_QUEUE,
            )
            try:
                outcome = await watcher.watch()
            except asyncio.CancelledError:
                out(
                    f"\nInterrupted. Run {run.run_id} stays on the server; a worker for task "
                    f"queue {DEMO_TASK_QUEUE} resumes it (`durable-tools show {run.run_id}`)."
                )
                raise
            out("")
            out("Timeline:")
            out(render_timeline(outcome.timeline))
            await _explain_artifacts(run, out, artifacts)
            out("")
            if outcome.final_answer is not None:
                out("Final answer:")
                out(outcome.final_answer)
            if outcome.reason:
                out(f"Reason: {clip(outcome.reason, 300)}")
            out(
                f"\nRun {outcome.status} in {time.monotonic() - began:.1f} s: "
                f"{outcome.turns} turns, {outcome.tool_calls} tool calls."
            )
            ok = outcome.ok
    finally:
        if server is not None:
            if keep_server:
                _print_kept(out, server)
            else:
                await server.stop()
                out("Temporal: stopped the embedded dev server.")
    return 0 if ok else 1


async def _explain_artifacts(run: AgentRun, out: Callable[[str], None], root: Path) -> None:
    """Show that the big export stayed out of the history: what the model saw, and where
    the full output is."""
    try:
        conversation = await run.conversation()
        history = await run.handle.fetch_history()
    except Exception:  # best effort: the demo's story does not depend on it
        return
    for message in conversation:
        content = message.content or ""
        cut = content.rfind("[output truncated")
        if message.role != "tool" or cut < 0:
            continue
        out(
            f"\n{message.name} returned a large output: the model saw "
            f"{len(content.encode())} bytes of it, the rest is in the artifact store ({root}):"
        )
        out("  " + clip(content[cut:], 400))
    size = sum(event.ByteSize() for event in history.events)
    out(f"History: {len(history.events)} events, {size / 1024:.0f} KB in all.")


def _print_kept(out: Callable[[str], None], server: DevServer) -> None:
    pid = server.leave_running()
    out(f"Temporal: the dev server keeps running (pid {pid}) at {server.address}.")
    if server.ui_base is not None:
        out(f"Open the UI: {server.ui_base}/namespaces/{server.namespace}/workflows")
    out(f"Stop it with: kill {pid}")
