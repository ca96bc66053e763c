"""`approve`/`deny` without `--hash`: the request is shown at a terminal and decided only on
a yes; through the inbox the same rules hold. The terminal is a real pseudo-terminal
around the installed command line, run against the session's dev server."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    ExecutionStrategy,
    PendingApproval,
    RunStatus,
)
from durable_tools.cli._confirm import describe_request
from durable_tools.inbox import (
    AuthConfig,
    InboxConfig,
    InboxServer,
    TokenStore,
    add_token,
    create_app,
)
from support import answer, calls, decisions_sent, running_worker, wait_for, write_script
from test_cli_approvals import pay_registry, reused_call_id_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

PROMPT = b"[y/N] "


class Terminal:
    """`durable-tools ARGS` running on a pseudo-terminal (stdin too, unless `piped_input`
    is given: then stdin is a pipe carrying it, as in `yes | durable-tools ...`)."""

    def __init__(self, *args: str, piped_input: bytes | None = None, timeout: float = 60) -> None:
        self._master, slave = pty.openpty()
        self._program = subprocess.Popen(
            [sys.executable, "-m", "durable_tools.cli", *args],
            stdin=subprocess.PIPE if piped_input is not None else slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,  # its own session: nothing from the test's terminal
        )
        os.close(slave)
        if piped_input is not None:
            assert self._program.stdin is not None
            self._program.stdin.write(piped_input)
            self._program.stdin.close()
        self._deadline = time.monotonic() + timeout
        self.shown = b""

    def _read(self, until: bytes | None) -> bool:
        """Read what the program shows until `until` appears (True) or it ends (False)."""
        while until is None or until not in self.shown:
            left = self._deadline - time.monotonic()
            assert left > 0, f"the command never got there; it showed {self.shown!r}"
            ready, _, _ = select.select([self._master], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # EIO: the program ended and closed its terminal
                return False
            if not chunk:
                return False
            self.shown += chunk
        return True

    async def wait_for_prompt(self) -> None:
        """Wait (in a thread: the test's worker keeps running) for the [y/N] question."""
        assert await asyncio.to_thread(self._read, PROMPT), f"no question: {self.text}"

    def type(self, answer: str) -> None:
        """Type `answer` and Enter, as a keyboard sends them."""
        os.write(self._master, answer.encode() + b"\r")

    async def finish(self) -> int:
        """Wait for the program to end; returns its exit code."""
        try:
            await asyncio.to_thread(self._read, None)
            left = max(1.0, self._deadline - time.monotonic())
            return await asyncio.to_thread(self._program.wait, left)
        finally:
            os.close(self._master)
            if self._program.poll() is None:
                self._program.kill()
                self._program.wait()

    @property
    def text(self) -> str:
        return self.shown.decode(errors="replace").replace("\r\n", "\n")


async def at_terminal(*args: str, answer: str) -> tuple[int, str]:
    """Run `durable-tools ARGS` at a terminal, answer its question; (exit code, screen)."""
    terminal = Terminal(*args)
    await terminal.wait_for_prompt()
    terminal.type(answer)
    code = await terminal.finish()
    return code, terminal.text


async def reused_id_pending(
    client: Client, task_queue: str, tmp_path: Path
) -> tuple[AgentRun, PendingApproval, PendingApproval]:
    """A run whose c1 (5 cents) alice approved and whose model reused c1 for 5,000,000;
    returns the run, the first request and the one now pending."""
    run = await DurableTools(client, task_queue).start("pay", model=reused_call_id_script(tmp_path))
    first = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals[0]
    await run.approve("c1", decider="alice", arguments_hash=first.arguments_hash)
    second = (
        await wait_for(
            run,
            lambda s: any(a.arguments_hash != first.arguments_hash for a in s.pending_approvals),
        )
    ).pending_approvals[0]
    return run, first, second


async def test_without_hash_a_terminal_shows_the_request_and_only_yes_decides(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str
) -> None:
    async with running_worker(client, pay_registry(), task_queue):
        run, _, second = await reused_id_pending(client, task_queue, tmp_path)

        # Answers piped in are no person at a terminal: refused before anything is shown.
        piped = Terminal("approve", run.run_id, "c1", "--as", "bob", piped_input=b"y\n" * 3)
        assert await piped.finish() == 2
        assert "--hash" in piped.text and "[y/N]" not in piped.text
        assert "5000000" not in piped.text

        code, shown = await at_terminal("approve", run.run_id, "c1", "--as", "bob", answer="n")
        # The exact request is shown before the question: tool, arguments, hash, approvals.
        assert 'pay {"amount_cents": 5000000} (call c1)' in shown
        assert f"arguments hash: {second.arguments_hash}" in shown
        assert "approvals so far: 0 of 1" in shown
        assert shown.index("5000000") < shown.index("approve this request? [y/N]")
        assert code == 1 and "nothing decided" in shown

        code, shown = await at_terminal("approve", run.run_id, "c1", "--as", "bob", answer="")
        assert code == 1 and "nothing decided" in shown  # Enter alone is no
        code, shown = await at_terminal("deny", run.run_id, "c1", "--as", "bob", answer="maybe")
        assert code == 1 and "deny this request? [y/N]" in shown
        assert [d["decider"] for d in await decisions_sent(run)] == ["alice"]
        assert (await run.status()).status == RunStatus.AWAITING_APPROVAL

        code, shown = await at_terminal("approve", run.run_id, "c1", "--as", "bob", answer="y")
        assert code == 0, shown
        assert f"approved: call c1 of run {run.run_id}" in shown
        assert (await run.result()).status == RunStatus.COMPLETED
        sent = await decisions_sent(run)
        assert [(d["decider"], d["arguments_hash"]) for d in sent][1:] == [
            ("bob", second.arguments_hash)
        ]


async def test_a_yes_to_a_request_replaced_while_asking_decides_nothing(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str
) -> None:
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start(
            "pay", model=reused_call_id_script(tmp_path)
        )
        first = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals[0]
        terminal = Terminal("approve", run.run_id, "c1", "--as", "bob")
        await terminal.wait_for_prompt()
        assert '"amount_cents": 5}' in terminal.text  # Bob is asked about 5 cents
        # Meanwhile Alice approves it and the model reuses c1 for 5,000,000.
        await run.approve("c1", decider="alice", arguments_hash=first.arguments_hash)
        await wait_for(
            run,
            lambda s: any(a.arguments_hash != first.arguments_hash for a in s.pending_approvals),
        )
        terminal.type("y")  # Bob's yes is about the 5 cents he saw
        assert await terminal.finish() == 2
        assert "not the request you saw" in terminal.text and "nothing was decided" in terminal.text
        assert [d["decider"] for d in await decisions_sent(run)] == ["alice"]
        [still] = (await run.status()).pending_approvals
        assert still.arguments["amount_cents"] == 5_000_000
        await run.cancel("test over")
        await run.result()


async def test_the_inbox_path_names_the_request_too(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any, monkeypatch: Any
) -> None:
    tokens = tmp_path / "tokens.json"
    monkeypatch.setenv("DURABLE_TOOLS_INBOX_TOKEN", add_token(tokens, "bob"))
    config = InboxConfig(auth=AuthConfig(TokenStore(tokens)), session_secret="s" * 32)
    server = InboxServer(create_app(DurableTools(client, task_queue), config), port=0)
    async with running_worker(client, pay_registry(), task_queue):
        run, first, second = await reused_id_pending(client, task_queue, tmp_path)
        await server.start()
        try:
            via = ["approve", run.run_id, "c1", "--inbox", server.url]
            code, out, err = await cli(capsys, *via)
            assert code == 2 and "--hash" in err and "terminal" in err
            assert "5000000" not in out + err
            code, out, err = await cli(capsys, *via, "--hash", first.arguments_hash)
            assert code == 2 and "not the request you saw" in err
            assert [d["decider"] for d in await decisions_sent(run)] == ["alice"]

            code, out, err = await cli(capsys, *via, "--hash", second.arguments_hash)
            assert code == 0, err
            assert "as bob" in out and '"amount_cents": 5000000' in out
        finally:
            await server.stop()
        assert (await run.result()).status == RunStatus.COMPLETED
        sent = await decisions_sent(run)
        assert [(d["decider"], d["arguments_hash"]) for d in sent][1:] == [
            ("bob", second.arguments_hash)
        ]


async def test_a_hash_picks_the_request_among_a_run_and_its_sub_agents(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    # The parent and its sub-agent both wait on a call c1 with the same arguments.
    registry = pay_registry()
    child = write_script(tmp_path, [calls(("c1", "pay", {"amount_cents": 5})), answer("ok")])
    registry.subagent(AgentConfig(model=child), name="writer", description="Writes.")
    parent = write_script(
        tmp_path,
        [
            calls(("c1", "pay", {"amount_cents": 5}), ("w1", "writer", {"task": "go"})),
            answer("done"),
        ],
    )
    config = AgentConfig(model=parent, strategy=ExecutionStrategy(mode="parallel"))
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        for _ in range(150):
            both = await run.pending_approvals()
            if len(both) == 2:
                break
            await asyncio.sleep(0.1)
        [(_, mine), (child_id, theirs)] = both
        assert mine.arguments_hash == theirs.arguments_hash
        digest = mine.arguments_hash

        # One hash, two requests: it does not say which, so nothing is decided.
        code, _, err = await cli(capsys, "approve", run.run_id, "c1", "--hash", digest)
        assert code == 2 and "several requests are pending for call c1" in err
        assert child_id in err
        assert await decisions_sent(run) == []
        assert await decisions_sent(AgentRun(client, child_id)) == []

        # Named in the run that waits for it, each is decided on its own.
        code, out, err = await cli(capsys, "approve", child_id, "c1", "--hash", digest)
        assert code == 0, err
        assert [d["arguments_hash"] for d in await decisions_sent(AgentRun(client, child_id))] == [
            digest
        ]
        code, out, err = await cli(capsys, "deny", run.run_id, "c1", "--hash", digest)
        assert code == 0, err
        assert "sub-agent" not in out and f"denied: call c1 of run {run.run_id}" in out
        assert (await run.result()).status == RunStatus.COMPLETED
        assert [d["approve"] for d in await decisions_sent(run)] == [False]


def test_the_request_shown_says_how_many_approvals_it_has() -> None:
    approval = PendingApproval(
        call_id="c1",
        tool="pay",
        arguments={"amount_cents": 5},
        arguments_hash="a" * 64,
        requested_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        approvals_required=2,
        approved_by=["alice\n  approvals so far: 2 of 2"],  # a forged line stays on its line
    )
    shown = describe_request("run-1", approval).splitlines()
    assert shown[-2] == "  requested at: 2026-01-02 03:04:05+00:00"
    assert shown[-1] == "  approvals so far: 1 of 2 (alice\\x0a  approvals so far: 2 of 2)"
