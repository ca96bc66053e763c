"""The inbox on the one decide path (`AgentRun.decide_request`): what its API says of a
malformed hash, two people deciding one call at once, users a policy would take for one
person, and the pending page when the runs' worker is down (in a real browser)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from inbox_support import (
    assert_undecided_then_cancel,
    cancel_and_check,
    http,
    make_app,
    make_users,
    pay_registry,
    pending_call,
    served,
    sign_in,
    start_pending,
)
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from durable_tools.inbox import TokenFileError, TokenStore, add_token
from support import answer, calls, decisions_sent, running_worker, wait_for

playwright_api = require_browser()


async def test_the_api_says_a_malformed_hash_is_malformed_and_what_it_expects(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with pending_call(client, task_queue, tmp_path) as (users, run, approval, _):
        async with http(make_app(client, task_queue, users)) as script:
            alice = {"Authorization": f"Bearer {users.alice}"}
            url = f"/api/runs/{run.run_id}/calls/c1/decide"
            missing = await script.post(url, json={"approve": True}, headers=alice)
            assert missing.status_code == 400 and "required" in missing.json()["error"]
            for malformed in (
                approval.arguments_hash[:12],  # a prefix: arguments can be ground to match one
                approval.arguments_hash + "0",
                "g" * 64,
                "\uff41" * 64,  # full-width "a"
                approval.arguments_hash[:32] + "\u200b" + approval.arguments_hash[33:],
                "a" * 60_000,
                5,
                ["a" * 64],
            ):
                body = {"approve": True, "arguments_hash": malformed}
                refused = await script.post(url, json=body, headers=alice)
                error = refused.json()["error"]
                assert refused.status_code == 400, (malformed, error)
                assert "malformed" in error and "64 hexadecimal" in error, error
                assert "required" not in error and len(error) < 400
            # A well-formed hash of other arguments is another request: refused as such.
            stale = await script.post(
                url, json={"approve": True, "arguments_hash": "0" * 64}, headers=alice
            )
            assert stale.status_code == 409 and "not the request you saw" in stale.json()["error"]
        await assert_undecided_then_cancel(run)


async def test_two_people_deciding_one_call_at_once_one_wins_and_the_other_learns_who(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # After c1 the run asks for a second payment, so it is still open (waiting) when the
    # last of the six decisions arrives: with the run ended, a late one learns that instead
    # (a fresh-clone run saw it).
    second = [calls(("c2", "pay", {"amount_cents": 700})), answer("done")]
    async with pending_call(client, task_queue, tmp_path, then=second) as (
        users,
        run,
        approval,
        _,
    ):
        async with http(make_app(client, task_queue, users)) as script:
            url = f"/api/runs/{run.run_id}/calls/c1/decide"
            answers = await asyncio.gather(
                *(
                    script.post(
                        url,
                        json={"approve": approve, "arguments_hash": approval.arguments_hash},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    for token, approve in ((users.alice, True), (users.bob, False)) * 3
                )
            )
        won = [a for a in answers if a.status_code == 200]
        lost = [a for a in answers if a.status_code != 200]
        assert len(won) == 1, [a.text for a in answers]
        [sent] = await decisions_sent(run)
        verdict = "approved" if sent["approve"] else "denied"
        assert won[0].json()["verdict"] == verdict
        for refused in lost:
            assert refused.status_code == 409, refused.text
            assert f"already {verdict} by {sent['decider']}" in refused.json()["error"]
        await wait_for(run, lambda s: any(p.call_id == "c2" for p in s.pending_approvals))
        await cancel_and_check(run)


def test_users_a_policy_would_take_for_one_person_are_refused(tmp_path: Path) -> None:
    # Policies compare decider names without case: `Alice` would decide alice's calls.
    path = tmp_path / "tokens.json"
    add_token(path, "alice", ["ops"])
    with pytest.raises(TokenFileError, match="one person"):
        add_token(path, "ALICE")
    add_token(path, "alice")  # a new token for the same user is fine
    written = json.loads(path.read_text())
    written["users"]["Alice"] = dict(written["users"]["alice"])
    written["users"]["Alice"]["token_sha256"] = "0" * 64
    path.write_text(json.dumps(written))
    with pytest.raises(TokenFileError, match="one person"):
        TokenStore(path)


async def test_with_the_worker_down_the_pending_page_says_runs_wait(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    async with running_worker(client, pay_registry(), task_queue):
        run, _, agent = await start_pending(client, task_queue, tmp_path)
    # The worker is gone; the run still waits for a person.
    app = make_app(client, task_queue, users)
    try:
        async with served(app) as server, playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page()
                await sign_in(page, server.url, users.alice)
                # Who may decide is the run's answer; without it, the run counts as hidden
                # (fail closed) and the page points to it.
                await page.goto(f"{server.url}/?agent={agent}", timeout=60_000)
                await page.wait_for_selector("p.empty", timeout=60_000)
                default = await page.inner_text("#pending")
                await page.click("text=show them")
                await page.wait_for_selector("p.empty", timeout=60_000)
                shown = await page.inner_text("#pending")
            finally:
                await browser.close()
    finally:
        await run.handle.terminate("test over")
    assert run.run_id not in default and "whose run did not answer" in default, default
    assert "Nothing is waiting for a person" not in shown, shown
    assert run.run_id in shown and "did not answer" in shown
    assert "1 call(s) waiting for a person, for pay" in shown
