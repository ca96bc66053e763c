"""A session message retried under its id after the session continued-as-new, on a real
dev server: answered with its reply, its tools not run again; other text under the id is
refused; what a session carries for retries stays bounded at load.

Temporal takes an update id once per run only. A client that lost a reply retries with the
same message id; when the session continued-as-new meanwhile, that id was new to the run
and the message, with its non-idempotent tool, ran a second time.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import pydantic_core
import pytest
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    RunStatus,
    SessionConfig,
    SessionRefused,
    ToolRegistry,
)
from durable_tools.protocol._session_types import (
    ANSWERED_CARRIED,
    ANSWERED_CARRIED_BYTES,
    AnsweredMessage,
    SessionReply,
    message_digest,
)
from durable_tools.workflows.run._session import answered_key, bounded_answered
from support import answer, assert_replays, calls, running_worker, wait_for, write_script

CHARGES: Counter[str] = Counter()
"""Runs of `charge` by order, outside any workflow (what a payment provider would see)."""


def charging_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool()
    def charge(order: str) -> str:
        """Charge an order's card (not idempotent)."""
        CHARGES[order] += 1
        return f"charged {order}"

    return registry


def session_config(model: str, **options: Any) -> AgentConfig:
    return AgentConfig(model=model, session=SessionConfig(), **options)


async def continued_and_idle(run: AgentRun, past: int) -> None:
    await wait_for(
        run, lambda s: s.continued > past and s.status == RunStatus.AWAITING_MESSAGE, timeout=60
    )


async def test_a_retry_after_continue_as_new_gets_the_reply_and_runs_nothing_again(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    order = f"o-{tmp_path.name}"
    model = write_script(
        tmp_path,
        [
            answer("hello"),  # the start prompt
            calls(("c1", "charge", {"order": order})),
            answer(f"charged {order}"),
            answer("next one"),
        ],
    )
    tools = DurableTools(client, task_queue)
    config = session_config(model, continue_as_new_after_events=20)
    # No cache: the run after continue-as-new knows the answered id from its input alone.
    async with running_worker(client, charging_registry(), task_queue, max_cached_workflows=0):
        run = await tools.start("hi", config=config)
        await continued_and_idle(run, -1)
        before = (await run.status()).continued
        first = await run.send("charge my order", message_id="pay-1")
        await continued_and_idle(run, before)  # the reply's run is over: a new run holds it
        # The client lost the reply and retries, three ways.
        again = await run.send("charge my order", message_id="pay-1")
        sent = await run.start_send("charge my order", message_id="pay-1")
        again_later = await sent.result()
        with_start = await tools.send(
            run.run_id, "charge my order", config=config, message_id="pay-1"
        )
        retried_history = await run.handle.fetch_history()
        with pytest.raises(SessionRefused, match=r"pay-1 was taken by message 2, with other"):
            await run.send("charge it twice", message_id="pay-1")
        following = await run.send("and now?", message_id="pay-2")
        snapshot = await run.status()
        events = [e.event for e in await run.events()]
        await run.close()
        await run.result()
    assert (first.message, first.answer, first.tool_calls) == (2, f"charged {order}", 1)
    assert again == first and again_later == first and with_start == first
    assert CHARGES[order] == 1, "the retried message's tool ran again"
    assert (following.message, following.answer) == (3, "next one")
    assert snapshot.session is not None and snapshot.session.messages == 3
    # The first retry reached the workflow; Temporal answered the later ones in this run
    # with its outcome.
    assert events.count("session.retried") == 1
    # The run that answered the retry replays from its history (the patch marker's).
    await assert_replays(retried_history)


async def test_what_a_session_carries_for_retries_is_bounded_at_load(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # 130 messages with answers of 3,000 characters, continuing-as-new all along: the
    # newest replies are kept whole, older ids only with their digest (a retry of one is
    # refused, not run), ids past `ANSWERED_CARRIED` not at all (a retry is a new message).
    count = 130
    body = "x" * 3_000
    steps = [answer("hello")] + [answer(f"{n} {body}") for n in range(count)]
    model = write_script(tmp_path, [*steps, answer("a new message")])
    config = session_config(model, continue_as_new_after_events=200)
    async with running_worker(client, ToolRegistry(), task_queue):
        run = await DurableTools(client, task_queue).start("hi", config=config)
        await wait_for(run, lambda s: s.status == RunStatus.AWAITING_MESSAGE)
        replies = [await run.send(f"message {n}", message_id=f"m-{n}") for n in range(count)]
        await wait_for(run, lambda s: s.status == RunStatus.AWAITING_MESSAGE)
        continued = (await run.status()).continued
        newest = await run.send(f"message {count - 1}", message_id=f"m-{count - 1}")
        with pytest.raises(SessionRefused, match="no longer kept"):
            await run.send("message 40", message_id="m-40")
        oldest = await run.send("message 0", message_id="m-0")  # forgotten: a new message
        await run.close()
        await run.result()
    assert continued >= 3, "the session never continued-as-new"
    assert newest == replies[-1]
    assert (oldest.message, oldest.answer) == (count + 2, "a new message")


def reply(n: int, chars: int) -> AnsweredMessage:
    text = f"message {n}"
    answered = SessionReply(
        message=n, status="awaiting_message", answer="y" * chars, text_sha256=message_digest(text)
    )
    return AnsweredMessage(id=f"m-{n}", message=n, text_sha256=message_digest(text), reply=answered)


@pytest.mark.parametrize("chars", [0, 1_000, 60_000, 1_000_000])
def test_carried_answers_fit_their_bounds_whatever_the_replies(chars: int) -> None:
    entries = [reply(n, chars) for n in range(5_000)]
    kept = bounded_answered(entries)
    size = sum(len(pydantic_core.to_json(e)) for e in kept)
    assert size <= ANSWERED_CARRIED_BYTES and 0 < len(kept) <= ANSWERED_CARRIED
    assert [e.message for e in kept] == list(range(5_000 - len(kept), 5_000))  # the newest
    with_reply = [e.reply is not None for e in kept]
    assert with_reply == sorted(with_reply)  # the newest keep their reply first
    assert (kept[-1].reply is not None) == (chars < ANSWERED_CARRIED_BYTES // 2)


def test_a_long_message_id_is_kept_as_its_digest() -> None:
    long_id = "m" * 10_000
    assert answered_key("short") == "short"
    assert answered_key(long_id).startswith("sha256:") and len(answered_key(long_id)) == 71
    assert answered_key(long_id) != answered_key(long_id + "x")


async def test_an_id_spelling_a_long_ids_digest_is_a_new_message(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # A long id is kept as `sha256:<hex>`; a short id spelling just that is another id,
    # and its message is new (before, it was answered with the long id's reply).
    long_id = "retry-" + "x" * 300
    lookalike = "sha256:" + hashlib.sha256(long_id.encode()).hexdigest()
    model = write_script(tmp_path, [answer("hello"), answer("first"), answer("second")])
    config = session_config(model, continue_as_new_after_events=20)
    async with running_worker(client, ToolRegistry(), task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start("hi", config=config)
        await continued_and_idle(run, -1)
        before = (await run.status()).continued
        first = await run.send("same words", message_id=long_id)
        await continued_and_idle(run, before)
        assert await run.send("same words", message_id=long_id) == first  # a retry
        other = await run.send("same words", message_id=lookalike)
        await run.close()
        await run.result()
    assert (first.message, first.answer) == (2, "first")
    assert (other.message, other.answer) == (3, "second")
