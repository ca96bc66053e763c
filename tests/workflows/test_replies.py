"""The exact tool messages the model reads, pinned byte for byte.

Every reply is built by `workflows.run._replies`; these texts are what each stage of the
call pipeline answered before that module existed. A run's later model activities carry
them in their input, so a change here is a change to what the model reads.
"""

from __future__ import annotations

from datetime import UTC, datetime

from durable_tools import InvalidArguments, ToolNotFound
from durable_tools.tools import ToolOutcome
from durable_tools.workflows.run._replies import (
    cancelled_outcome,
    cancelled_reply,
    denied_reply,
    final_answer_repair_reply,
    invalid_reply,
    over_budget_reply,
    over_turn_limit_reply,
    result_reply,
    search_reply,
    skipped_reply,
    unauthorized_reply,
)

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_result_reply_passes_the_outcome_through() -> None:
    ok = ToolOutcome(call_id="c1", tool_name="add", content="3", is_error=False)
    failed = ToolOutcome(call_id="c1", tool_name="add", content="boom", is_error=True)

    assert (m := result_reply("c1", "add", ok)).content == "3"
    assert (m.role, m.tool_call_id, m.name, m.is_error, m.at) == ("tool", "c1", "add", False, None)
    assert result_reply("c1", "add", failed).is_error is True


def test_invalid_replies() -> None:
    bad = InvalidArguments("bad", errors=["$.a: not an integer"])
    m = invalid_reply("c1", "add", bad)
    assert m.content == (
        "Tool call c1 to 'add' was not run: the arguments are invalid.\n"
        "- $.a: not an integer\nFix the arguments and call 'add' again."
    )
    assert (m.is_error, m.at) == (True, None)
    unknown = invalid_reply("c2", "ad", ToolNotFound("unknown tool 'ad'"), available=["add"], at=AT)
    assert unknown.content == (
        "Tool call c2 to 'ad' was not run: no tool of that name is available. "
        "Available tools: add. Use one of the available tools."
    )
    assert (unknown.is_error, unknown.at) == (True, AT)


def test_over_turn_limit_reply() -> None:
    m = over_turn_limit_reply("c9", "x" * 100, asked=5, limit=3, at=AT)
    assert m.content == (
        f"Tool call c9 to {'x' * 64!r} was not run: you asked for 5 tool calls in one "
        "message, and at most 3 run per turn (max_tool_calls_per_turn); the first 3 ran. "
        "Call it again in a later message if you still need it."
    )
    assert (m.name, m.is_error, m.at) == ("x" * 100, True, AT)


def test_over_budget_reply_keeps_is_error_unset() -> None:
    one = over_budget_reply("c1", "send", 1)
    assert one.content == (
        "Tool call c1 to 'send' was not run: the budget of 1 call for tool 'send' in this "
        "run is used up. Do not call 'send' again in this run; go on with the results you "
        "have or another tool."
    )
    assert (one.is_error, one.at) == (None, None)
    assert "the budget of 2 calls for tool" in (over_budget_reply("c1", "send", 2).content or "")


def test_gate_replies() -> None:
    denied = denied_reply("c1", "rm", "denied by alice: no")
    assert denied.content == (
        "Tool call c1 to 'rm' was denied: denied by alice: no. Do not repeat the same "
        "call; choose another action or ask the user."
    )
    assert (denied.is_error, denied.at) == (True, None)
    refused = unauthorized_reply("c1", "gh", "access_denied")
    assert refused.content == (
        "Tool call c1 to 'gh' needs the user's authorization: authorization failed: access_denied."
    )
    assert (refused.is_error, refused.at) == (True, None)


def test_cancelled_reply_and_outcome_share_one_wording() -> None:
    m = cancelled_reply("c1", "slow", "the user stopped it", AT)
    assert m.content == "Tool call c1 to 'slow' was cancelled: the user stopped it."
    assert (m.is_error, m.at) == (True, AT)
    outcome = cancelled_outcome("c1", "slow", "the user stopped it")
    assert (outcome.content, outcome.is_error, outcome.error_kind) == (
        m.content,
        True,
        "Cancelled",
    )


def test_skipped_search_and_final_answer_replies() -> None:
    skipped = skipped_reply("c1", "add", "stop now", AT)
    assert skipped.content == "skipped: the user steered: stop now"
    assert (skipped.is_error, skipped.at) == (True, AT)
    found = search_reply("s", "search_tools", ["- add: adds", "- sub: subtracts"], "math")
    assert found.content == (
        "Tools found (callable from your next message):\n- add: adds\n- sub: subtracts"
    )
    assert found.is_error is False
    assert search_reply("s", "search_tools", [], "zz").content == "No tool matches 'zz'."
    repair = final_answer_repair_reply("c1", "final_answer", "Your answer ... (1 problem):\n- x")
    assert repair.content == (
        "Your answer ... (1 problem):\n- x\nCall `final_answer` again with corrected arguments."
    )
    assert (repair.name, repair.is_error, repair.at) == ("final_answer", True, None)
