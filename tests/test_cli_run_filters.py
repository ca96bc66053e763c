"""`runs` and `pending` filtered by agent, user, tenant, tool and start time, on the real
dev server: a filter value is one literal in the visibility query, whatever it holds."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli, cli_json
from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    ExecutionStrategy,
    Identity,
    ToolRegistry,
    search_attributes as sa,
)
from support import answer, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


async def _listed(
    capsys: Any, *args: str, until: Callable[[set[str]], bool], mine: set[str]
) -> set[str]:
    """The run ids of ours a listing prints, once `until` holds (visibility trails runs)."""
    deadline = asyncio.get_running_loop().time() + 15
    while True:
        found = {entry["run_id"] for entry in await cli_json(capsys, *args)} & mine
        if until(found) or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.1)


async def _start(
    tools: DurableTools, agent: str, identity: Identity | None = None, model: str = "scripted:x"
) -> AgentRun:
    config = AgentConfig(model=model, name=agent)
    return await tools.start("hi", config=config, identity=identity)


HOSTILE_AGENTS = [
    "o'brien",
    "x' OR 'a'='a",
    "x') OR (AgentName != 'y",
    "caf\u00e9",  # composed ...
    "cafe\u0301",  # ... and decomposed: two names
    "\uff07fullwidth quote",
    "a%b",
    "a_b",
    "z" * 150,
]


async def test_a_filter_value_never_changes_the_query(
    client: Client, task_queue: str, cli_env: str, capsys: Any
) -> None:
    tag = uuid.uuid4().hex[:6]
    tools = DurableTools(client, task_queue)
    runs = {name: await _start(tools, tag + name) for name in HOSTILE_AGENTS}
    runs["plain"] = await _start(tools, tag + "aXb")
    mine = {run.run_id for run in runs.values()}
    try:
        for name in HOSTILE_AGENTS:
            expected = {runs[name].run_id}
            found = await _listed(
                capsys, "runs", "--agent", tag + name, until=lambda f, e=expected: f == e, mine=mine
            )
            assert found == expected, name
        # A quote cannot end the literal early in --status either.
        for status in ("running' OR AgentName != 'x", "running') OR ('1'='1"):
            assert await cli_json(capsys, "runs", "--status", status) == []

        # What no store matches reliably is refused in one line, before any query.
        for flag, value, said in [
            ("--agent", tag + 'a"b', "double quote"),
            ("--agent", tag + "a\\b", "backslash"),
            ("--agent", "o'", "ends with a quote"),
            ("--user", "'o", "starts or ends with a quote"),
            ("--user", "al\nice", "control character"),
            ("--tenant", "\x1b[2Jacme", "control character"),
            ("--tool", "t" * 201, "too long"),
            ("--agent", "", "empty"),
        ]:
            for command in ("runs", "pending"):
                code, out, err = await cli(capsys, command, flag, value)
                assert code == 2 and out == "", err
                assert said in err and err.count("\n") == 1 and "\x1b" not in err, err
    finally:
        for run in runs.values():
            await run.handle.terminate("test over")


async def test_runs_by_user_tenant_and_start_time(
    client: Client, task_queue: str, cli_env: str, capsys: Any
) -> None:
    agent = f"filters-{uuid.uuid4().hex[:6]}"
    tools = DurableTools(client, task_queue)
    acme_alice = await _start(tools, agent, Identity(user="alice", tenant="acme"))
    acme_bob = await _start(tools, agent, Identity(user="bob", tenant="acme"))
    globex_alice = await _start(tools, agent, Identity(user="alice", tenant="globex"))
    nobody = await _start(tools, agent)
    every = [acme_alice, acme_bob, globex_alice, nobody]
    mine = {run.run_id for run in every}
    try:
        assert await _listed(capsys, "runs", "--agent", agent, until=mine.__eq__, mine=mine) == mine
        for filters, expected in [
            (["--user", "alice"], {acme_alice, globex_alice}),
            (["--tenant", "acme"], {acme_alice, acme_bob}),
            (["--user", "alice", "--tenant", "acme"], {acme_alice}),
            (["--user", "ALICE"], set()),
            (["--user", "alice' OR 'a'='a"], set()),
            (["--since", "1h"], set(every)),
            (["--since", "2999-01-01T00:00:00"], set()),
        ]:
            found = await cli_json(capsys, "runs", "--agent", agent, *filters)
            assert {r["run_id"] for r in found} == {r.run_id for r in expected}, filters

        # --since an ISO time: the runs started at or after it.
        later = (await globex_alice.handle.describe()).start_time
        assert later is not None
        found = await cli_json(capsys, "runs", "--agent", agent, "--since", later.isoformat())
        assert {r["run_id"] for r in found} == {globex_alice.run_id, nobody.run_id}
        # The far ends of time are queried as such (year 1 as 0001, not 1).
        found = await cli_json(capsys, "runs", "--agent", agent, "--since", "0001-01-01")
        assert {r["run_id"] for r in found} == mine
        assert await cli_json(capsys, "runs", "--agent", agent, "--since", "9999-12-31") == []
        for since, said in [
            ("yesterday", "neither an age"),
            ("\uff11h", "neither an age"),  # a fullwidth digit
            ("-1h", "neither an age"),
            ("99999999w", "ten years"),
            ("0001-01-01T00:00:00+01:00", "out of range"),
            ("9999-12-31T23:59:59-01:00", "out of range"),
        ]:
            code, _, err = await cli(capsys, "runs", f"--since={since}")
            assert code == 2 and said in err and "Traceback" not in err, err
    finally:
        for run in every:
            await run.handle.terminate("test over")


def two_tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True)
    def pay(amount_cents: int) -> str:
        """Pay an amount."""
        return "paid"

    @registry.tool(approval=True)
    def wire(iban: str) -> str:
        """Wire money."""
        return "wired"

    return registry


@pytest.mark.parametrize("worker", [True, False])
async def test_pending_by_user_and_tool(
    worker: bool, client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    agent = f"pending-{uuid.uuid4().hex[:6]}"
    both = write_script(
        tmp_path,
        [calls(("c1", "pay", {"amount_cents": 5}), ("c2", "wire", {"iban": "X"})), answer("ok")],
    )
    one = write_script(tmp_path, [calls(("c1", "pay", {"amount_cents": 7})), answer("ok")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, two_tools(), task_queue):
        parallel = AgentConfig(model=both, name=agent, strategy=ExecutionStrategy(mode="parallel"))
        alice = await tools.start("pay and wire", config=parallel, identity=Identity(user="alice"))
        bob = await _start(tools, agent, Identity(user="bob"), model=one)
        await wait_for(alice, lambda s: len(s.pending_approvals) == 2)
        await wait_for(bob, lambda s: len(s.pending_approvals) == 1)
    mine = {alice.run_id, bob.run_id}
    try:
        async with running_worker(client, two_tools(), task_queue) if worker else _nothing():
            if worker:  # (without one, each listing waits out the status queries)
                found = await _listed(
                    capsys, "pending", "--agent", agent, until=mine.__eq__, mine=mine
                )
                assert found == mine
                by_user = await cli_json(capsys, "pending", "--agent", agent, "--user", "alice")
                assert [r["run_id"] for r in by_user] == [alice.run_id]

            paid = await _listed(
                capsys, "pending", "--agent", agent, "--tool", "pay", until=mine.__eq__, mine=mine
            )
            assert paid == mine
            # The run waits on wire too, though AwaitingTool names pay (its first call).
            awaiting = (await alice.handle.describe()).typed_search_attributes
            assert awaiting.get(sa.AWAITING_TOOL) == "pay"
            wired = await cli_json(capsys, "pending", "--agent", agent, "--tool", "wire")
            if worker:
                [entry] = wired
                assert entry["run_id"] == alice.run_id
                assert [a["call_id"] for a in entry["approvals"]] == ["c2"]
                code, text, _ = await cli(capsys, "pending", "--agent", agent, "--tool", "wire")
                assert code == 0 and "wire" in text and "amount_cents" not in text
            else:  # no worker to ask: the server's AwaitingTool is all there is
                assert wired == []
            runs_paid = await cli_json(capsys, "runs", "--agent", agent, "--tool", "pay")
            assert {r["run_id"] for r in runs_paid} == mine
    finally:
        for run in (alice, bob):
            await run.handle.terminate("test over")


class _nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None
