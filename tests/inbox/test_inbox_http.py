"""The inbox over HTTP (httpx against the app, real Temporal, real worker): who may read and
decide, CSRF, the trusted proxy header, the JSON API, escaping, and the recorded decider."""

from __future__ import annotations

from pathlib import Path

from inbox_support import (
    assert_undecided_then_cancel,
    cancel_and_check,
    csrf_token,
    decide_by_form,
    http,
    login,
    make_app,
    make_users,
    pay_registry,
    pending_call,
)
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus
from support import (
    answer,
    assert_not_wedged,
    calls,
    decisions_sent,
    running_worker,
    wait_for,
    write_script,
)


async def test_unauthenticated_requests_are_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with pending_call(client, task_queue, tmp_path) as (users, run, approval, _):
        async with http(make_app(client, task_queue, users)) as anonymous:
            assert (await anonymous.get("/api/pending")).status_code == 401
            wrong = {"Authorization": "Bearer not-a-token"}
            assert (await anonymous.get("/api/pending", headers=wrong)).status_code == 401
            page = await anonymous.get("/")
            assert page.status_code == 303 and page.headers["location"].startswith("/login")
            call = f"/runs/{run.run_id}/calls/c1"
            assert (await anonymous.get(call)).status_code == 303
            decided = await anonymous.post(
                f"/api/runs/{run.run_id}/calls/c1/decide",
                json={"approve": True, "arguments_hash": approval.arguments_hash},
            )
            assert decided.status_code == 401
            form = await anonymous.post(
                call + "/decide",
                data={"action": "approve", "arguments_hash": approval.arguments_hash},
            )
            assert form.status_code == 401
        await assert_undecided_then_cancel(run)


async def test_a_form_post_without_csrf_decides_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with pending_call(client, task_queue, tmp_path) as (users, run, approval, _):
        async with http(make_app(client, task_queue, users)) as browser:
            await login(browser, users.alice)
            url = f"/runs/{run.run_id}/calls/c1/decide"
            fields = {"action": "approve", "arguments_hash": approval.arguments_hash}
            assert (await browser.post(url, data=fields)).status_code == 403
            forged = {**fields, "csrf_token": "forged"}
            assert (await browser.post(url, data=forged)).status_code == 403
            # The session's JSON API needs the token in a header, too.
            api = f"/api/runs/{run.run_id}/calls/c1/decide"
            body = {"approve": True, "arguments_hash": approval.arguments_hash}
            assert (await browser.post(api, json=body)).status_code == 403
        await assert_undecided_then_cancel(run)


async def test_the_form_decision_records_the_logged_in_user(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with pending_call(client, task_queue, tmp_path) as (users, run, approval, _):
        async with http(make_app(client, task_queue, users)) as browser:
            await login(browser, users.bob)
            fields = {
                "action": "deny",
                "reason": "not today",
                "arguments_hash": approval.arguments_hash,
                "decider": "mallory",  # ignored: the decider is who is logged in
            }
            page, decided = await decide_by_form(browser, run.run_id, "c1", fields)
            assert approval.arguments_hash in page
            assert decided.status_code == 303, decided.text
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        [sent] = await decisions_sent(run)
        assert sent["decider"] == "bob" and sent["approve"] is False
        assert sent["arguments_hash"] == approval.arguments_hash
        assert sent["reason"] == "not today"
        await assert_not_wedged(run.handle)


async def test_a_proxy_header_counts_only_from_a_trusted_proxy(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with pending_call(client, task_queue, tmp_path) as (users, run, approval, agent):
        app = make_app(client, task_queue, users, trusted=["10.0.0.7"])
        claim = {"X-Forwarded-User": "carol"}
        async with http(app, peer="10.0.0.8") as untrusted:
            assert (await untrusted.get("/api/pending", headers=claim)).status_code == 401
            assert (await untrusted.get("/", headers=claim)).status_code == 303
        async with http(app, peer="10.0.0.7") as proxied:
            listed = await proxied.get(f"/api/pending?agent={agent}", headers=claim)
            assert listed.status_code == 200
            assert listed.json()["user"] == "carol"
            # A proxied browser is cookie-borne: a decision needs the CSRF token.
            url = f"/runs/{run.run_id}/calls/c1/decide"
            fields = {"action": "approve", "arguments_hash": approval.arguments_hash}
            assert (await proxied.post(url, data=fields, headers=claim)).status_code == 403
            _, decided = await decide_by_form(proxied, run.run_id, "c1", fields, headers=claim)
            assert decided.status_code == 303
        await run.result()
        [sent] = await decisions_sent(run)
        assert sent["decider"] == "carol"
        await assert_not_wedged(run.handle)


async def test_api_lists_and_decides_with_a_bearer_token(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    waiting = pending_call(client, task_queue, tmp_path, deciders=("group:ops",))
    async with waiting as (users, run, approval, agent):
        async with http(make_app(client, task_queue, users)) as script:
            alice = {"Authorization": f"Bearer {users.alice}"}
            bob = {"Authorization": f"Bearer {users.bob}"}
            listed = (await script.get(f"/api/pending?agent={agent}", headers=alice)).json()
            [item] = listed["pending"]
            assert item["run_id"] == run.run_id and item["call_id"] == "c1"
            assert item["tool"] == "pay" and item["may_decide"] is True
            assert item["arguments_hash"] == approval.arguments_hash
            url = f"/api/runs/{run.run_id}/calls/c1/decide"
            body = {"approve": True, "arguments_hash": approval.arguments_hash, "reason": "ok"}
            # bob is not in group ops: refused before anything reaches the run.
            refused = await script.post(url, json=body, headers=bob)
            assert refused.status_code == 403
            stale = {**body, "arguments_hash": "0" * 64}
            assert (await script.post(url, json=stale, headers=alice)).status_code == 409
            decided = await script.post(url, json=body, headers=alice)
            assert decided.status_code == 200, decided.text
            assert decided.json()["verdict"].startswith("approved")
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        [sent] = await decisions_sent(run)
        assert sent["decider"] == "alice via group:ops"
        timeline = await run.decided_timeline()
        assert timeline[0].decided_by == "alice via group:ops"
        assert timeline[0].status == "completed"
        await assert_not_wedged(run.handle)


async def test_hostile_arguments_are_escaped_on_the_call_page(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    hostile = {"amount_cents": 1, "memo": "<script>alert(1)</script>", "card": "4111-secret"}
    waiting = pending_call(client, task_queue, tmp_path, arguments=hostile)
    async with waiting as (users, run, _, agent):
        async with http(make_app(client, task_queue, users)) as browser:
            await login(browser, users.alice)
            for url in (f"/runs/{run.run_id}/calls/c1", f"/?agent={agent}", f"/runs/{run.run_id}"):
                page = await browser.get(url)
                assert page.status_code == 200, url
                assert "<script>alert" not in page.text, url
                assert "4111-secret" not in page.text, url  # redacted per the tool
                assert "default-src 'self'" in page.headers["content-security-policy"]
            call_page = (await browser.get(f"/runs/{run.run_id}/calls/c1")).text
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in call_page
            assert "Pay an amount (needs approval)." in call_page  # the tool's description
            # An unknown run is a plain 404, not an error page with a traceback.
            assert (await browser.get("/runs/no-such-run")).status_code == 404
        await cancel_and_check(run)


async def test_approve_and_stop_asking_grants_the_tool_for_the_rest_of_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    model = write_script(
        tmp_path,
        [
            calls(("c1", "pay", {"amount_cents": 500})),
            calls(("c2", "pay", {"amount_cents": 700})),
            answer("done"),
        ],
    )
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay twice", model=model)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        async with http(make_app(client, task_queue, users)) as browser:
            await login(browser, users.bob)
            fields = {
                "action": "remember",
                "arguments_hash": snapshot.pending_approvals[0].arguments_hash,
            }
            page, asked = await decide_by_form(browser, run.run_id, "c1", fields)
            assert 'value="remember"' in page
            # No one-click grant: the first post only says what the grant allows.
            assert asked.status_code == 200, asked.text
            assert "until the run ends" in asked.text and 'name="confirm"' in asked.text
            assert await decisions_sent(run) == []
            confirmed = {**fields, "confirm": "yes", "csrf_token": csrf_token(asked.text)}
            decided = await browser.post(f"/runs/{run.run_id}/calls/c1/decide", data=confirmed)
            assert decided.status_code == 303, decided.text
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert timeline["c1"].decided_by == "bob" and timeline["c1"].status == "completed"
    # The second payment was not asked again: the grant bob gave covered it.
    assert timeline["c2"].status == "completed" and timeline["c2"].decided_by is None
    assert (timeline["c2"].policy_layer or "").startswith("grant")
