"""Approvals from the command line: a decision binds to the request shown, text output
cannot be steered by hostile call ids or arguments, and `show` says who decided."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowUpdateFailedError

import cli_support
from cli_support import cli, cli_json
from durable_tools import DurableTools, RunStatus, ToolRegistry
from durable_tools.cli import CliError
from durable_tools.cli._confirm import hash_given
from durable_tools.client.render._text import terminal_safe
from support import answer, calls, decisions_sent, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def pay_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def pay(amount_cents: int, memo: str = "") -> str:
        """Pay an amount (needs approval)."""
        return f"paid {amount_cents}"

    return registry


def reused_call_id_script(directory: Path) -> str:
    """The model reuses call id c1: 5 cents in turn 1, 5,000,000 in turn 2."""
    return write_script(
        directory,
        [
            calls(("c1", "pay", {"amount_cents": 5})),
            calls(("c1", "pay", {"amount_cents": 5_000_000})),
            answer("done"),
        ],
    )


async def test_a_decision_on_a_reused_call_id_names_the_request_seen(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    # Bob runs `pending` and sees c1 pay 5 cents; Alice approves it; the model reuses c1
    # for 5,000,000. Bob's `approve RUN c1` must not approve the request he never saw.
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start(
            "pay", model=reused_call_id_script(tmp_path)
        )
        first = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals[0]
        code, listed, _ = await cli(capsys, "pending")
        assert code == 0
        # `pending` prints the full hash, and the exact command that decides with it.
        assert f"arguments hash: {first.arguments_hash}" in listed
        assert f"approve {run.run_id} c1 --hash {first.arguments_hash}" in listed

        code, out, err = await cli(
            capsys,
            "approve",
            run.run_id,
            "c1",
            "--as",
            "alice",
            "--reason",
            "small",
            "--hash",
            first.arguments_hash,
        )
        assert code == 0, err
        # The decider sees what they approve: tool, arguments and hash.
        assert 'pay {"amount_cents": 5} (call c1)' in out and first.arguments_hash in out

        second = (
            await wait_for(
                run,
                lambda s: any(
                    a.arguments_hash != first.arguments_hash for a in s.pending_approvals
                ),
            )
        ).pending_approvals[0]
        assert second.arguments["amount_cents"] == 5_000_000

        # Without --hash and without a terminal to ask on: refused, nothing sent.
        code, out, err = await cli(capsys, "approve", run.run_id, "c1", "--as", "bob")
        assert code == 2
        assert "--hash" in err and "terminal" in err
        assert "5000000" not in out + err  # nothing shown as if it were about to be decided

        # The hash Bob saw names the old request: refused as stale, nothing sent.
        code, out, err = await cli(
            capsys, "approve", run.run_id, "c1", "--as", "bob", "--hash", first.arguments_hash
        )
        assert code == 2
        assert "not the request you saw" in err and "durable-tools pending" in err
        # A short prefix of the new hash names nothing: arguments can be chosen to match one.
        code, _, err = await cli(
            capsys, "approve", run.run_id, "c1", "--hash", second.arguments_hash[:12]
        )
        assert code == 2 and "64" in err

        # Library callers pass what they mean: the run itself refuses a decision on the
        # reused id that names no request, or names the old one.
        with pytest.raises(WorkflowUpdateFailedError) as unnamed:
            await run.approve("c1", decider="carol")
        assert "must carry the arguments hash" in str(unnamed.value.cause)
        with pytest.raises(WorkflowUpdateFailedError) as stale:
            await run.approve("c1", decider="carol", arguments_hash=first.arguments_hash)
        assert "hash does not match" in str(stale.value.cause)

        assert [d["decider"] for d in await decisions_sent(run)] == ["alice"]
        status = await run.status()
        assert status.status == RunStatus.AWAITING_APPROVAL
        assert [a.arguments_hash for a in status.pending_approvals] == [second.arguments_hash]
        assert [r.status for r in await run.timeline()] == ["completed", "awaiting_approval"]

        # The new request's hash (as copied, in capitals too) decides the new request.
        code, out, err = await cli(
            capsys,
            "approve",
            run.run_id,
            "c1",
            "--as",
            "bob",
            "--hash",
            f" {second.arguments_hash.upper()} ",
        )
        assert code == 0, err
        assert '"amount_cents": 5000000' in out and second.arguments_hash in out
        assert (await run.result()).status == RunStatus.COMPLETED

        sent = await decisions_sent(run)
        assert [(d["decider"], d["arguments_hash"]) for d in sent] == [
            ("alice", first.arguments_hash),
            ("bob", second.arguments_hash),
        ]

        # `show` says who decided each approval, when and why.
        shown = await cli_json(capsys, "show", run.run_id)
        decided = [(r["decided_by"], r["decision_reason"], r["status"]) for r in shown["timeline"]]
        assert decided == [("alice", "small", "completed"), ("bob", None, "completed")]
        assert all(r["decided_at"] for r in shown["timeline"])
        code, text, _ = await cli(capsys, "show", run.run_id)
        assert "call c1 (pay, turn 1): approved by alice at " in text and ": small" in text
        assert "call c1 (pay, turn 2): approved by bob at " in text


async def test_approve_an_unknown_call_says_what_is_pending(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    model = write_script(tmp_path, [calls(("c1", "pay", {"amount_cents": 5})), answer("ok")])
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        [pending] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        code, _, err = await cli(capsys, "approve", run.run_id, "c2", "--hash", "0" * 64)
        assert code == 2 and "no approval is pending for call c2" in err
        code, _, err = await cli(
            capsys, "approve", run.run_id, "c2", "--hash", pending.arguments_hash
        )
        assert code == 2 and "no approval is pending for call c2" in err
        await run.cancel("test over")
        await run.result()


HOSTILE_ID = 'c9\r\x1b[2Kapproval needed: pay {"amount_cents": 5} (call c9)\x9b2K'
HOSTILE_MEMO = "\u202e5 stnec\u202c"


async def test_hostile_call_ids_and_arguments_cannot_steer_the_terminal(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    model = write_script(
        tmp_path,
        [
            calls((HOSTILE_ID, "pay", {"amount_cents": 5_000_000, "memo": HOSTILE_MEMO})),
            answer("paid \x1b[31mred\x1b[0m"),
        ],
    )

    def assert_inert(text: str) -> None:
        for raw in ("\r", "\x1b", "\x9b", "\u202e", "\u202c"):
            assert raw not in text, f"{raw!r} reached the terminal"

    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        [waiting] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals

        code, out, _ = await cli(capsys, "pending")
        assert code == 0
        assert_inert(out)
        assert "5000000" in out and "\\x1b[2K" in out and "\\u202e" in out

        code, out, _ = await cli(capsys, "show", run.run_id)
        assert code == 0
        assert_inert(out)
        assert "\\x0d\\x1b[2Kapproval needed" in out

        # JSON stays exact (and escaped, so it is inert on a terminal too).
        code, raw_json, _ = await cli(capsys, "show", run.run_id, "--json")
        assert_inert(raw_json)
        [pending] = json.loads(raw_json)["pending_approvals"]
        assert pending["call_id"] == HOSTILE_ID
        assert pending["arguments"]["memo"] == HOSTILE_MEMO

        code, out, err = await cli(
            capsys,
            "approve",
            run.run_id,
            HOSTILE_ID,
            "--as",
            "ops",
            "--hash",
            waiting.arguments_hash,
        )
        assert code == 0, err
        assert_inert(out + err)
        assert (await run.result()).status == RunStatus.COMPLETED

        code, out, _ = await cli(capsys, "show", run.run_id)
        assert_inert(out)
        assert "paid \\x1b[31mred\\x1b[0m" in out


def test_terminal_safe_escapes_what_a_terminal_acts_on() -> None:
    hostile = "a\x00b\x07c\x1b[2Kd\x7fe\x85f\x9bg\u2028h\u200fi\u2066j\u2069k"
    assert terminal_safe(hostile) == (
        "a\\x00b\\x07c\\x1b[2Kd\\x7fe\\x85f\\x9bg\\u2028h\\u200fi\\u2066j\\u2069k"
    )
    assert terminal_safe("line 1\nline 2\tcol", multiline=True) == "line 1\nline 2\tcol"
    assert terminal_safe("one\nfield") == "one\\x0afield"
    assert terminal_safe("ünïcödé, 漢字, emoji 🙂") == "ünïcödé, 漢字, emoji 🙂"


@pytest.mark.parametrize(
    "given",
    [
        "",  # empty is not "absent": it names nothing, so it decides nothing
        "a" * 12,  # a prefix is refused: arguments can be ground to share one
        "a" * 63,
        "a" * 65,
        "g" * 64,
        "\uff41" * 64,  # fullwidth "a"
        "\u0661" * 64,  # Arabic-Indic digit one
        "a" * 32 + "\x1b[2K" + "a" * 28,
        "a" * 10_000_000,
    ],
)
def test_hash_given_accepts_only_a_full_hex_hash(given: str) -> None:
    with pytest.raises(CliError, match="64 hexadecimal characters") as refused:
        hash_given(given)
    assert "\x1b" not in str(refused.value) and len(str(refused.value)) < 300


def test_hash_given_takes_a_pasted_hash_as_it_is_meant() -> None:
    digest = "0123456789abcdef" * 4
    assert hash_given(None) is None
    assert hash_given(f"  {digest.upper()}\n") == digest


async def test_a_group_decided_call_is_decided_by_a_member_named_as_such(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    from durable_tools import AgentConfig, ApprovalPolicy
    from durable_tools.inbox import add_token

    tokens = tmp_path / "tokens.json"
    add_token(tokens, "alice", groups=["ops"])
    add_token(tokens, "bob", groups=["sales"])
    steps = [calls(("c1", "pay", {"amount_cents": 5})), answer("paid")]
    config = AgentConfig(
        model=write_script(tmp_path, steps), approval=ApprovalPolicy(deciders=("group:ops",))
    )
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay", config=config)
        [pending] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        decide = ("approve", run.run_id, "c1", "--hash", pending.arguments_hash)
        # bob is not in ops: refused before anything is sent, saying what would work.
        code, _, err = await cli(capsys, *decide, "--as", "bob", "--tokens-file", str(tokens))
        assert code == 2 and "bob" in err and "group:ops" in err and "inbox" in err
        # Naming the group oneself claims a membership nobody checked: refused.
        code, _, err = await cli(
            capsys, *decide, "--as", "bob via group:ops", "--tokens-file", str(tokens)
        )
        assert code == 2 and "person's name" in err
        # A group is not a person: `--as group:ops` decides nothing.
        code, _, err = await cli(capsys, *decide, "--as", "group:ops", "--tokens-file", str(tokens))
        assert code == 2
        code, _, err = await cli(capsys, *decide, "--as", "alice", "--tokens-file", str(tokens))
        assert code == 0, err
        assert (await run.result()).status == RunStatus.COMPLETED
        [record] = await run.timeline()
    assert record.decided_by == "alice via group:ops"


async def test_approving_twice_says_who_decided_and_when(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    # Alice approves c1; Bob, a moment late, approves it too. He must learn that Alice
    # decided it and when, not that nothing is pending (as if it never had been).
    model = write_script(
        tmp_path,
        [
            calls(("c1", "pay", {"amount_cents": 5}), ("c2", "pay", {"amount_cents": 7})),
            answer("ok"),
        ],
    )
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        first = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals[0]
        assert first.call_id == "c1"
        code, _, err = await cli(
            capsys,
            "approve",
            run.run_id,
            "c1",
            "--as",
            "alice",
            "--reason",
            "small",
            "--hash",
            first.arguments_hash,
        )
        assert code == 0, err
        await wait_for(run, lambda s: [a.call_id for a in s.pending_approvals] == ["c2"])
        for verb in ("approve", "deny"):
            code, _, err = await cli(
                capsys, verb, run.run_id, "c1", "--as", "bob", "--hash", first.arguments_hash
            )
            assert code == 2
            assert f"call c1 of run {run.run_id} was already approved by alice at 20" in err
            assert "UTC: small" in err and "Traceback" not in err
        assert [d["decider"] for d in await decisions_sent(run)] == ["alice"]
        await run.cancel("test over")
        await run.result()


HOSTILE_CALL = "c$(touch pwned)`id`;x"
"""A call id a model (steered by a prompt injection) may send: shell syntax throughout."""


async def test_printed_commands_pass_hostile_ids_as_one_word_each(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    # An operator copies the command `pending` prints into a shell: the run id (an app may
    # derive it from a chat's id) and the call id (the model's) must reach `approve` as
    # they are, never as shell syntax.
    model = write_script(
        tmp_path, [calls((HOSTILE_CALL, "pay", {"amount_cents": 5})), answer("ok")]
    )
    run_id = "chat-$(reboot) 'x'"
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model, run_id=run_id)
        pending = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals[0]
        code, listed, err = await cli(capsys, "pending")
        metadata = await run.handle.query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )
        await run.cancel("test over")
        await run.result()
    assert code == 0, err
    [line] = [ln for ln in listed.splitlines() if "durable-tools approve" in ln]
    words = shlex.split(line[line.index("durable-tools approve") :])
    expected = ["durable-tools", "approve", run_id, HOSTILE_CALL, "--hash", pending.arguments_hash]
    assert words == expected
    # The UI's details are markdown: each command stays one code span (a backtick of the
    # call id would end the span, and what follows would render as markdown).
    [resume] = [ln for ln in metadata.current_details.splitlines() if "approve" in ln]
    spans = resume.split("`")[1::2]
    [command] = [span for span in spans if span.startswith("durable-tools approve")]
    assert shlex.split(command)[:3] == expected[:3], resume
    assert shlex.split(command)[4:] == expected[4:], resume
