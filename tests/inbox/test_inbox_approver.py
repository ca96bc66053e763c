"""The call page's explanations and its attacks, over HTTP against the real app and run:
a summary that tries to be HTML, a grant confirmed on arguments that changed, a second
"stop asking" without its confirmation, an encrypted run over the JSON API, a catalog
that inflates without end; and the sentences themselves (`_explain`), one by one.
"""

from __future__ import annotations

import base64
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from inbox_support import (
    csrf_token,
    decide_by_form,
    http,
    login,
    make_app,
    make_users,
)
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    ApprovalPolicy,
    DurableTools,
    Identity,
    PendingApproval,
    ToolRegistry,
)
from durable_tools.codec import EncryptionCodec, KeyRing, data_converter
from durable_tools.inbox._explain import acts_for, at_deadline, grant_offer, short_prompt
from durable_tools.inbox._run_record import MAX_CATALOG_BYTES, RunRecords, _unpack
from support import answer, calls, decisions_sent, running_worker, wait_for, write_script


def refund_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, approval_summary="Refund {amount_cents:money} on {order_id}")
    def refund(amount_cents: int, order_id: str) -> str:
        """Refund an order."""
        return "ok"

    return registry


async def test_a_summary_is_escaped_and_a_grant_needs_its_confirmation_on_the_same_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    hostile = {"amount_cents": 5, "order_id": "<script>alert(1)</script>"}
    model = write_script(tmp_path, [calls(("c1", "refund", hostile)), answer("done")])
    async with running_worker(client, refund_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("refund", model=model)
        [pending] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        async with http(make_app(client, task_queue, users)) as browser:
            await login(browser, users.alice)
            page = await browser.get(f"/runs/{run.run_id}/calls/c1")
            assert "<script>alert" not in page.text
            assert "Refund «<bdi" in page.text
            assert "&lt;script&gt;alert(1)&lt;/script&gt;</bdi>»" in page.text
            # Narrowed to this run: the dev server is shared, and a listed run whose worker
            # is gone takes the page its query timeout to answer.
            listed = (await browser.get("/pending/rows", params={"run": run.run_id})).text
            assert "<script>alert" not in listed
            assert ">&lt;script&gt;alert(1)&lt;/script&gt;</bdi>»" in listed
            # The confirmation is for the arguments shown: another hash is refused there.
            stale = {"action": "remember", "arguments_hash": "0" * 64}
            _, refused = await decide_by_form(browser, run.run_id, "c1", stale)
            assert refused.status_code == 409 and "changed" in refused.text
            # Confirmed with a hash that is not the call's: the decision is refused too.
            forged = {**stale, "confirm": "yes", "csrf_token": csrf_token(page.text)}
            decided = await browser.post(f"/runs/{run.run_id}/calls/c1/decide", data=forged)
            assert decided.status_code == 409
            # `confirm` other than "yes" is no confirmation.
            almost = {
                "action": "remember",
                "arguments_hash": pending.arguments_hash,
                "confirm": "YES",
                "csrf_token": csrf_token(page.text),
            }
            asked = await browser.post(f"/runs/{run.run_id}/calls/c1/decide", data=almost)
            assert asked.status_code == 200 and 'id="confirm-grant"' in asked.text
            assert await decisions_sent(run) == []
        await run.cancel("test over")


async def test_an_encrypted_run_over_the_api_is_named_and_refused_cleanly(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    codec = EncryptionCodec(KeyRing({"api-test": bytes(range(1, 33))}))
    secure = await Client.connect(
        client.service_client.config.target_host,
        namespace=client.namespace,
        data_converter=data_converter(codec),
    )
    model = write_script(tmp_path, [calls(("c1", "refund", {"amount_cents": 1, "order_id": "x"}))])
    async with running_worker(secure, refund_registry(), task_queue):
        run = await DurableTools(secure, task_queue).start("refund", model=model)
        [pending] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        bearer = {"Authorization": f"Bearer {users.alice}"}
        async with http(make_app(client, task_queue, users)) as api:
            for _ in range(100):  # visibility is eventually consistent
                listed = (await api.get(f"/api/pending?run={run.run_id}", headers=bearer)).json()
                if listed["encrypted_runs"]:
                    break
            [encrypted] = listed["encrypted_runs"]
            assert encrypted["run_id"] == run.run_id and encrypted["awaiting_tool"] == "refund"
            assert listed["unreachable_runs"] == [] and listed["pending"] == []
            decided = await api.post(
                f"/api/runs/{run.run_id}/calls/c1/decide",
                json={"approve": True, "arguments_hash": pending.arguments_hash},
                headers=bearer,
            )
            assert decided.status_code == 503
            assert "DURABLE_TOOLS_CODEC_KEYS" in decided.json()["error"]
        await run.cancel("test over")


def test_a_catalog_that_inflates_past_the_bound_is_not_read() -> None:
    bomb = zlib.compress(b"[" + b" " * (MAX_CATALOG_BYTES + 10) + b"]", 9)
    assert len(bomb) < 100_000
    assert _unpack({"data": base64.b64encode(bomb).decode()}) == []
    assert _unpack({"data": "not base64!"}) == []
    assert _unpack({"data": base64.b64encode(b"not zlib").decode()}) == []
    good = zlib.compress(b'[{"name": "pay"}]')
    assert _unpack({"data": base64.b64encode(good).decode()}) == [{"name": "pay"}]


def approval(**changes: object) -> PendingApproval:
    now = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    fields: dict[str, object] = {
        "call_id": "c1",
        "tool": "refund",
        "arguments": {},
        "arguments_hash": "0" * 64,
        "requested_at": now,
        "deadline": now + timedelta(hours=2),
    }
    return PendingApproval.model_validate({**fields, **changes})


NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def test_what_happens_at_the_deadline_is_said_plainly() -> None:
    assert "No deadline" in at_deadline(approval(deadline=None), None, NOW)
    denied = at_deadline(approval(), ApprovalPolicy(timeout_seconds=7200), NOW)
    assert denied.startswith("At 2030-01-01 14:00:00 UTC (in 2 h 0 min)")
    assert "it is denied (the agent is told" in denied
    ends = ApprovalPolicy(timeout_seconds=7200, on_deny="end_run")
    assert "denied and the run ends" in at_deadline(approval(), ends, NOW)
    fails = ApprovalPolicy(timeout_seconds=7200, on_timeout="fail")
    assert "the run fails" in at_deadline(approval(), fails, NOW)
    escalates = ApprovalPolicy(
        timeout_seconds=7200, on_timeout="escalate", escalate_to=("carol", "group:leads")
    )
    said = at_deadline(approval(), escalates, NOW)
    assert "escalated to carol, group:leads" in said and "2 h 0 min later" in said
    again = at_deadline(approval(escalated=True), escalates, NOW)
    assert "it is denied" in again and "escalated already" in again
    late = at_deadline(approval(), ApprovalPolicy(timeout_seconds=1), NOW + timedelta(days=1))
    assert "(now)" in late


def test_whom_the_run_acts_for_and_the_prompt_cut() -> None:
    assert acts_for(Identity(tenant="acme", user="dana")) == "user dana of tenant acme"
    assert acts_for(Identity(tenant="acme")) == "tenant acme"
    assert "no particular user" in acts_for(Identity())
    assert short_prompt("hi") == ("hi", False)
    cut, was_cut = short_prompt("x" * 5000)
    assert was_cut and len(cut) == 600 and cut.endswith("…")
    assert "not known" in short_prompt(None)[0]


def test_a_grant_is_not_offered_where_it_would_be_refused() -> None:
    offer = grant_offer(approval())
    assert offer is not None and "until the run ends" in offer and "any arguments" in offer
    assert grant_offer(approval(approvals_required=2)) is None


async def test_runs_with_one_catalog_share_one_parsed_copy_and_the_copies_are_bounded(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The inbox keeps the records of 256 runs. Each held its own parsed catalog: a
    # 1,200-tool OpenAPI catalog is some 28 MB parsed, so an inbox over many runs of
    # that agent grew by gigabytes. Runs of one agent record the same catalog.
    registry = refund_registry()

    @registry.tool(read_only=True)
    def lookup(order_id: str) -> str:
        """Look an order up."""
        return "found"

    model = write_script(
        tmp_path, [calls(("r1", "refund", {"amount_cents": 5, "order_id": "A1"})), answer("ok")]
    )
    tools = DurableTools(client, task_queue)
    async with running_worker(client, registry, task_queue):
        runs = [await tools.start("refund", model=model) for _ in range(3)]
        narrow = await tools.start("refund", config=AgentConfig(model=model, tools=["refund"]))
        for run in [*runs, narrow]:
            await wait_for(run, lambda s: bool(s.pending_approvals))
        records = RunRecords(tools)
        read = [await records.record(run.run_id, 0) for run in runs]
        # Room for one parsed catalog: reading another drops the records that held it.
        tight = RunRecords(tools, catalog_bytes=1)
        before = await tight.record(runs[0].run_id, 0)
        other = await tight.record(narrow.run_id, 0)
        again = await tight.record(runs[0].run_id, 0)
        for run in [*runs, narrow]:
            await run.cancel("test over")
    assert all(r.catalog is not None and set(r.catalog) == {"refund", "lookup"} for r in read)
    assert read[0].catalog is read[1].catalog is read[2].catalog
    assert records.catalogs == 1
    assert other.catalog is not None and set(other.catalog) == {"refund"}
    assert again.catalog == before.catalog and again.catalog is not before.catalog  # read again
    assert tight.catalogs == 1
