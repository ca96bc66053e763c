"""How a tool is presented: its safety notes in the description the model reads, its tags
found by search, and a display label people read instead of its snake_case name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_tools import DurableTools, RunStatus, ToolRegistrationError, ToolRegistry, ToolSpec
from durable_tools.client.render._text import render_approval
from durable_tools.models import aclose_shared_clients
from durable_tools.tools import search_specs
from fake_openai import FakeOpenAIServer, chat_completion, tool_call
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    running_worker,
    wait_for,
    write_script,
)

NOTES = "Deletes for good: confirm the account id with the user first."


def deferred_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(loading="deferred", tags=("billing",))
    def issue_credit_note(customer: str) -> str:
        """Issue a credit note."""
        return customer

    @registry.tool(loading="deferred", tags=("billing", "refunds"))
    def reverse_charge(charge: str) -> str:
        """Reverse a charge."""
        return charge

    @registry.tool(loading="deferred")
    def rename_user(user: str) -> str:
        """Rename a user."""
        return user

    return registry


def test_tags_alone_find_a_tool_the_words_of_its_name_and_description_do_not() -> None:
    registry = deferred_registry()
    # The model's `search_tools` ranks with the same index: a tag is searchable text.
    found = search_specs(registry.specs(), "refunds")
    assert [s.name for s in found] == ["reverse_charge"]
    assert {s.name for s in registry.search("billing")} == {"issue_credit_note", "reverse_charge"}


def test_search_by_tags_filters_and_a_query_ranks_within_them() -> None:
    registry = deferred_registry()
    names = lambda specs: [s.name for s in specs]  # noqa: E731
    assert names(registry.search(tags=["billing"])) == ["issue_credit_note", "reverse_charge"]
    assert names(registry.search(tags=["billing", "refunds"])) == ["reverse_charge"]
    assert names(registry.search(tags="refunds")) == ["reverse_charge"]  # one tag, not letters
    assert names(registry.search("reverse", tags=["billing"])) == ["reverse_charge"]
    assert names(registry.search("rename", tags=["billing"])) == []
    assert names(registry.search(tags=["BILLING"])) == []  # exact, as the catalog's `tag=`
    assert registry.search() == []  # no query and no tags: nothing asked, nothing found
    assert names(registry.search(tags=["billing"], limit=1)) == ["issue_credit_note"]


def test_a_label_is_what_people_read_and_the_name_what_machines_use() -> None:
    registry = ToolRegistry()

    @registry.tool(label="Refund an order", approval=True)
    def refund_order(order_id: str) -> str:
        """Refund an order."""
        return order_id

    spec = registry.get("refund_order").spec
    assert (spec.name, spec.label, spec.display_name) == (
        "refund_order",
        "Refund an order",
        "Refund an order",
    )
    assert ToolSpec(name="plain").display_name == "plain"


@pytest.mark.parametrize(
    "label",
    [
        "",
        " Refund",
        "Refund  order",
        "Refund\norder",
        "[Refund](https://evil.example)",  # markdown in the Temporal UI's summaries
        "<b>Refund</b>",
        "Refund `x`",
        "Refund\u202eredro",  # a bidirectional override reorders what people read
        "Ref\u200bund",
        "x" * 81,
    ],
)
def test_a_label_that_could_be_markup_or_hide_text_is_refused(label: str) -> None:
    with pytest.raises(ValidationError):
        ToolSpec(name="refund", label=label)
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError, match="label"):
        registry.register(lambda: "x", name="refund", label=label)


def test_the_cli_shows_the_label_with_the_name() -> None:
    from datetime import UTC, datetime

    from durable_tools import PendingApproval

    approval = PendingApproval(
        call_id="c1",
        tool="refund_order",
        tool_label="Refund an order",
        arguments={"order_id": "A-1"},
        arguments_hash="0" * 64,
        requested_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    shown = render_approval("run-1", approval)
    assert 'approval needed: Refund an order (refund_order) {"order_id": "A-1"}' in shown
    assert "durable-tools approve run-1 c1" in shown  # commands name the call, not the label


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(
        [
            chat_completion(
                tool_calls=[tool_call("d1", "delete_account", json.dumps({"account_id": "a1"}))]
            ),
            chat_completion("deleted"),
        ]
    ) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


def summaries(history: Any, kind: str) -> list[str]:
    converter = pydantic_data_converter.payload_converter
    return [
        converter.from_payload(event.user_metadata.summary, str)
        for event in history.events
        if event.HasField(kind) and event.HasField("user_metadata")
    ]


async def test_notes_reach_the_model_and_the_label_the_people(
    client: Client, task_queue: str, openai_server: FakeOpenAIServer
) -> None:
    registry = ToolRegistry()
    deleted: list[str] = []

    @registry.tool(approval=True, idempotent=True, safety_notes=NOTES, label="Delete an account")
    def delete_account(account_id: str) -> str:
        """Delete a customer account."""
        deleted.append(account_id)
        return "gone"

    try:
        async with running_worker(client, registry, task_queue):
            run = await DurableTools(client, task_queue).start("delete a1", model="openai:fake")
            snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
            (waiting,) = snapshot.pending_approvals
            assert (waiting.tool, waiting.tool_label) == ("delete_account", "Delete an account")
            await run.approve("d1", decider="alice")
            result = await run.result()
            await assert_not_wedged(run.handle)
            history = await run.handle.fetch_history()
    finally:
        await aclose_shared_clients()
    assert result.status == RunStatus.COMPLETED and deleted == ["a1"]
    first = openai_server.requests[0].json
    (tool,) = first["tools"]
    assert tool["function"]["name"] == "delete_account"  # the model calls it by its name
    assert tool["function"]["description"] == f"Delete a customer account.\n\nSafety notes: {NOTES}"
    # The Temporal UI's timeline reads the label: the tool's activity and the approval's timer.
    activities = summaries(history, "activity_task_scheduled_event_attributes")
    assert any(line.startswith("Delete an account d1") for line in activities), activities
    assert summaries(history, "timer_started_event_attributes") == []  # no deadline, no timer
    # A run its client started at the current input revision reads the notes with no patch
    # asked: the catalog's local activity is its only marker (a patch asked right after
    # that activity could fail a replay, and each marker costs history).
    markers = [
        e.marker_recorded_event_attributes.marker_name
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
    ]
    assert markers == ["core_local_activity"], markers
    await assert_replays(history)


async def test_the_models_search_tools_finds_a_tool_by_its_tag_alone(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path,
        [
            calls(("s1", "search_tools", {"query": "refunds"})),
            calls(("r1", "reverse_charge", {"charge": "ch_1"})),
            answer("done"),
        ],
    )
    async with running_worker(client, deferred_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("undo ch_1", model=model)
        assert (await run.result()).status == RunStatus.COMPLETED
        replies = {m.tool_call_id: m.content or "" for m in await run.conversation()}
    # Neither its name nor its description says "refund": only its tag does.
    assert "reverse_charge" in replies["s1"] and "issue_credit_note" not in replies["s1"]
    assert replies["r1"] == "ch_1"
