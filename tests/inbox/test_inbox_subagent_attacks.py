"""Attacks on the inbox's view of runs waiting on their sub-agents: who sees and decides a
sub-agent's call through its parent, and what a hostile wait does to the pages.

A break is marked `xfail(strict=True, reason="BREAK: ...")`: the test says what should
hold and fails today. The attacks that hold are plain tests.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inbox_support import csrf_token, http, login, make_app, make_users
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    ApprovalPolicy,
    DurableTools,
    ExecutionStrategy,
    RunStatus,
    ToolRegistry,
)
from support import (
    answer,
    calls,
    decisions_sent,
    notice_token,
    running_worker,
    wait_for,
    write_script,
)

SIGNAL = "subagent_waits"
OPS_ONLY = ApprovalPolicy(deciders=("group:ops",))


def registry_with_child(
    tmp_path: Path,
    paid: list[int],
    *,
    approval: ApprovalPolicy | None = None,
    steps: list[dict[str, Any]] | None = None,
) -> ToolRegistry:
    """`pay` (needs approval) and a `payer` sub-agent that pays 700 cents (or follows
    the script `steps`)."""
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, approval_summary="pay {amount_cents} cents")
    def pay(amount_cents: int) -> str:
        """Pay an amount (needs approval)."""
        paid.append(amount_cents)
        return f"paid {amount_cents}"

    steps = steps or [calls(("c1", "pay", {"amount_cents": 700})), answer("paid")]
    model = write_script(tmp_path, steps)
    registry.subagent(
        AgentConfig(model=model, approval=approval or ApprovalPolicy()),
        name="payer",
        description="Pays.",
    )
    return registry


async def start_parent(client: Client, task_queue: str, tmp_path: Path) -> tuple[AgentRun, str]:
    """A parent whose `payer` sub-agent waits; returned once the inbox can list both."""
    agent = f"parent-{uuid.uuid4().hex[:8]}"
    model = write_script(tmp_path, [calls(("s1", "payer", {"task": "pay"})), answer("done")])
    tools = DurableTools(client, task_queue)
    run = await tools.start("delegate", config=AgentConfig(name=agent, model=model))
    await wait_for(run, lambda s: bool(s.subagent_approvals))
    child_id = f"{run.run_id}.s1"
    for _ in range(200):  # visibility is eventually consistent
        listed = {s.run_id for s in await tools.pending()}
        if {run.run_id, child_id} <= listed:
            return run, agent
        await asyncio.sleep(0.1)
    raise AssertionError("the parent and its child never showed up as waiting")


async def test_a_user_who_may_not_decide_the_childs_call_is_not_shown_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    paid: list[int] = []
    async with running_worker(
        client, registry_with_child(tmp_path, paid, approval=OPS_ONLY), task_queue
    ):
        run, _ = await start_parent(client, task_queue, tmp_path)
        async with http(make_app(client, task_queue, users)) as inbox:
            bearer = {"Authorization": f"Bearer {users.bob}"}
            listed: dict[str, Any] = (await inbox.get("/api/pending", headers=bearer)).json()
            await login(inbox, users.bob)
            page = (await inbox.get("/")).text
        await run.cancel("test over")
    assert listed["pending"] == [] and listed["hidden"] >= 1  # the child's own row: hidden
    assert listed["subagent_waits"] == [], listed["subagent_waits"]
    assert "pay «700» cents" not in page and 'id="subagent-waits"' not in page


async def test_deciding_through_the_parent_checks_the_childs_deciders(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: bob (not in group:ops, the child's deciders) is refused through the parent's
    # page and API, nothing reaches the child; alice (ops) decides it through the parent,
    # recorded in the child as the child's policy names her.
    users = make_users(tmp_path)
    paid: list[int] = []
    async with running_worker(
        client, registry_with_child(tmp_path, paid, approval=OPS_ONLY), task_queue
    ):
        run, _ = await start_parent(client, task_queue, tmp_path)
        child = AgentRun(client, f"{run.run_id}.s1")
        [wait] = (await run.status()).subagent_approvals
        path = f"/runs/{run.run_id}/calls/c1"
        body = {"approve": True, "arguments_hash": wait.arguments_hash}
        async with http(make_app(client, task_queue, users)) as inbox:
            refused = await inbox.post(
                f"/api{path}/decide", json=body, headers={"Authorization": f"Bearer {users.bob}"}
            )
            await login(inbox, users.bob)
            page = await inbox.get(path)
            form = {
                "csrf_token": csrf_token(page.text),
                "action": "approve",
                "arguments_hash": wait.arguments_hash,
            }
            by_form = await inbox.post(f"{path}/decide", data=form)
            assert await decisions_sent(child) == [] and paid == []
            decided = await inbox.post(
                f"/api{path}/decide",
                json=body,
                headers={"Authorization": f"Bearer {users.alice}"},
            )
        result = await run.result()
        sent = await decisions_sent(child)
        sent_to_parent = await decisions_sent(run)
    assert refused.status_code == 403, refused.text
    assert by_form.status_code in (303, 403)
    assert decided.status_code == 200, decided.text
    assert [d["decider"] for d in sent] == ["alice via group:ops"] and sent_to_parent == []
    assert result.status == RunStatus.COMPLETED and paid == [700]


async def shown_after_notice(
    client: Client, task_queue: str, tmp_path: Path, *, run_id_suffix: str = "", **wait: Any
) -> tuple[str, str, dict[str, Any]]:
    """The pending page, the parent's run page and `/api/pending` as alice has them once
    the parent took a notice (with the child's token) of the wait `wait` of its child (the
    child's run id + `run_id_suffix`, the call id and arguments hash of its real wait
    unless given)."""
    users = make_users(tmp_path)
    paid: list[int] = []
    async with running_worker(client, registry_with_child(tmp_path, paid), task_queue):
        run, agent = await start_parent(client, task_queue, tmp_path)
        child_id = f"{run.run_id}.s1"
        [real] = (await run.status()).subagent_approvals
        told = {
            "run_id": child_id + run_id_suffix,
            "call_id": real.call_id,
            "arguments_hash": real.arguments_hash,
            "requested_at": datetime.now(UTC).isoformat(),
            "deciders": [],  # anyone: listed to alice
            **wait,
        }
        notice = {
            "child_id": child_id,
            "sent_at": datetime.now(UTC).isoformat(),
            "seq": 10**6,
            "waits": [told],
            # The child's token (its own text, or a reader of its input): the parent takes it.
            "token": await notice_token(client, child_id),
        }
        await run.handle.signal(SIGNAL, notice)
        for _ in range(200):
            if any(w.tool == told["tool"] for w in (await run.status()).subagent_approvals):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"{run.run_id} never took the notice")
        async with http(make_app(client, task_queue, users)) as inbox:
            await login(inbox, users.alice)
            pending = (await inbox.get("/", params={"agent": agent})).text
            run_page = (await inbox.get(f"/runs/{run.run_id}")).text
            api = (
                await inbox.get(
                    "/api/pending",
                    params={"agent": agent},
                    headers={"Authorization": f"Bearer {users.alice}"},
                )
            ).json()
        await run.cancel("test over")
    return pending, run_page, api


SCRIPT = "<script>alert(1)</script>"


async def test_hostile_html_in_a_notice_is_escaped_on_the_inbox_pages(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: HTML in a wait's run id, call id, tool, label and summary is text on the
    # pending page and the run page; the links to the run ids stay inside the inbox.
    tool = f"pay{SCRIPT}"
    pending, run_page, api = await shown_after_notice(
        client,
        task_queue,
        tmp_path,
        run_id_suffix='."><img src=x onerror=alert(2)>/../../evil',
        call_id=f"c1{SCRIPT}",
        tool=tool,
        tool_label=SCRIPT,
        summary=f"pay «{SCRIPT}» cents {SCRIPT}",
    )
    assert 'id="subagent-waits"' in pending and 'id="subagent-waits"' in run_page
    for page in (pending, run_page):
        assert SCRIPT not in page and "<img src=x" not in page
        hostile = [h for h in re.findall(r'href="([^"]*)"', page) if "alert" in h]
        assert hostile and all(h.startswith("/runs/") and "/../" not in h for h in hostile)
        assert all("<" not in h and '"' not in h for h in hostile), hostile
    assert api["subagent_waits"][0]["tool"] == tool  # the API gives the data as it is


async def test_bidi_and_zero_width_characters_of_a_notice_do_not_reach_the_pages(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    pending, run_page, _ = await shown_after_notice(
        client, task_queue, tmp_path, tool="pay\u200b", summary="pay 700 cents \u202e to rekcah"
    )
    for page in (pending, run_page):
        assert "\u202e" not in page and "\u200b" not in page


async def test_a_long_summary_relayed_keeps_model_text_marked(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: a summary is at most 300 characters with its last value closed
    # (tools/_approval_summary._marked), so the relay's clip to 300 never cuts a mark off,
    # and the model's words stay marked on the parent's page.
    users = make_users(tmp_path)
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, approval_summary="send {a} to {b} as {c}")
    def send(a: str, b: str, c: str) -> str:
        """Send (needs approval)."""
        return "sent"

    forged = "SAFE-READ-ONLY-PREVIEW"
    arguments = {"a": "x" * 200, "b": "y" * 200, "c": forged + "z" * 200}
    model = write_script(tmp_path, [calls(("c1", "send", arguments)), answer("sent")])
    registry.subagent(AgentConfig(model=model), name="sender", description="Sends.")
    agent = f"parent-{uuid.uuid4().hex[:8]}"
    parent = write_script(tmp_path, [calls(("s1", "sender", {"task": "go"})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "delegate", config=AgentConfig(name=agent, model=parent)
        )
        [wait] = (await wait_for(run, lambda s: bool(s.subagent_approvals))).subagent_approvals
        async with http(make_app(client, task_queue, users)) as inbox:
            await login(inbox, users.alice)
            run_page = (await inbox.get(f"/runs/{run.run_id}")).text
        await run.cancel("test over")
    summary = wait.summary or ""
    assert summary.count("«") == summary.count("»"), summary
    section = run_page.split('id="subagent-waits"', 1)[1]
    at = section.index(forged)
    assert section[:at].endswith('title="written by the model">'), section[at - 80 : at]


async def test_each_sub_agent_wait_links_to_its_own_call_page(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, approval_summary="pay {amount_cents} cents")
    def pay(amount_cents: int) -> str:
        """Pay an amount (needs approval)."""
        return f"paid {amount_cents}"

    for name, cents in (("small", 7), ("large", 90000)):
        model = write_script(tmp_path, [calls(("c1", "pay", {"amount_cents": cents})), answer("")])
        registry.subagent(AgentConfig(model=model), name=name, description=f"Pays {name}.")
    parent = write_script(
        tmp_path,
        [calls(("s1", "small", {"task": "pay"}), ("s2", "large", {"task": "pay"})), answer("")],
    )
    config = AgentConfig(model=parent, strategy=ExecutionStrategy(mode="parallel"))
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("delegate", config=config)
        await wait_for(run, lambda s: len(s.subagent_approvals) == 2)
        async with http(make_app(client, task_queue, users)) as inbox:
            await login(inbox, users.alice)
            run_page = (await inbox.get(f"/runs/{run.run_id}")).text
            items = re.findall(r'<li class="subagent-wait"><a href="([^"]+)"', run_page)
            pages = [(await inbox.get(link)).text for link in items]
        await run.cancel("test over")
    assert len(items) == 2
    shown = ["90000" in page for page in pages]
    assert len(set(items)) == 2 and sorted(shown) == [False, True], items


async def test_a_stale_parent_page_decision_is_refused_with_a_clear_status(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: the parent's page was read while the child waited; the child's call is then
    # decided in the child (someone else, on the child's page). Deciding it again through
    # the parent's API is refused (409 decided / 404 nothing pending), saying which call.
    users = make_users(tmp_path)
    paid: list[int] = []
    async with running_worker(client, registry_with_child(tmp_path, paid), task_queue):
        run, _ = await start_parent(client, task_queue, tmp_path)
        child = AgentRun(client, f"{run.run_id}.s1")
        [wait] = (await run.status()).subagent_approvals
        async with http(make_app(client, task_queue, users)) as inbox:
            await child.decide_request("c1", True, arguments_hash=wait.arguments_hash, decider="x")
            late = await inbox.post(
                f"/api/runs/{run.run_id}/calls/c1/decide",
                json={"approve": False, "arguments_hash": wait.arguments_hash},
                headers={"Authorization": f"Bearer {users.alice}"},
            )
        result = await run.result()
        sent = await decisions_sent(child)
    assert late.status_code in (404, 409), late.text
    assert "c1" in late.text
    assert [d["decider"] for d in sent] == ["x"]
    assert result.status == RunStatus.COMPLETED and paid == [700]


async def test_remember_through_the_parents_page_grants_in_the_child_only(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: "approve and stop asking" on the parent's page for the child's call makes a
    # standing grant in the child (its next call of the tool runs unasked), none in the
    # parent, and the child's deciders still apply to it (bob is refused first).
    users = make_users(tmp_path)
    paid: list[int] = []
    twice = [
        calls(("c1", "pay", {"amount_cents": 700})),
        calls(("c2", "pay", {"amount_cents": 800})),
        answer("paid twice"),
    ]
    registry = registry_with_child(tmp_path, paid, approval=OPS_ONLY, steps=twice)
    async with running_worker(client, registry, task_queue):
        run, _ = await start_parent(client, task_queue, tmp_path)
        child = AgentRun(client, f"{run.run_id}.s1")
        path = f"/runs/{run.run_id}/calls/c1"
        async with http(make_app(client, task_queue, users)) as inbox:
            forms = []
            for token in (users.bob, users.alice):
                await login(inbox, token)
                page = await inbox.get(path)
                form = {
                    "csrf_token": csrf_token(page.text),
                    "action": "remember",
                    "confirm": "yes",
                    "arguments_hash": (await run.status()).subagent_approvals[0].arguments_hash,
                }
                forms.append(await inbox.post(f"{path}/decide", data=form))
        result = await run.result()
        child_grants = await child.grants()
        parent_grants = await run.grants()
    assert forms[0].status_code == 403 and forms[1].status_code == 303, forms
    assert result.status == RunStatus.COMPLETED and paid == [700, 800]
    assert [g.tool for g in child_grants] == ["pay"] and parent_grants == []
