"""Code mode's bounds on a real dev server, as the model reads them: `max_tool_calls`
counted per message in a session (as direct calls are), a failed script that says which
of its host calls ran, and a script that printed too much told so (not `max_memory_bytes`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    CodeMode,
    DurableTools,
    Limits,
    RunStatus,
    SessionConfig,
    ToolRegistry,
)
from support import answer, calls, running_worker, wait_for, write_script


def counting_registry(ran: list[int]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def tick(n: int) -> int:
        """Count one."""
        ran.append(n)
        return n

    return registry


def script(call_id: str, source: str) -> dict[str, Any]:
    return calls((call_id, "run_script", {"script": source}))


def tool_replies(conversation: list[Any]) -> dict[str, str]:
    return {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}


TWO_TICKS = "a = await tick(n=1)\nb = await tick(n=2)\na + b"


async def test_a_sessions_scripts_count_tool_calls_per_message(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # max_tool_calls is 3: each message's script (itself a call) makes two calls, so the
    # session's total passes the limit at the second message. A direct call counts per
    # message; a host call counted the whole session, and every later script failed.
    ran: list[int] = []
    model = write_script(
        tmp_path,
        [
            script("s1", TWO_TICKS),
            answer("one"),
            script("s2", TWO_TICKS),
            answer("two"),
            # Three calls in one message: the third is over the limit and is refused; the
            # script does not catch it and fails.
            script("s3", "await tick(n=1)\nawait tick(n=2)\nawait tick(n=3)"),
            answer("three"),
        ],
    )
    config = AgentConfig(
        model=model,
        code_mode=CodeMode(),
        limits=Limits(max_tool_calls=3),
        session=SessionConfig(),
    )
    async with running_worker(client, counting_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        await wait_for(run, lambda s: s.status == RunStatus.AWAITING_MESSAGE)
        second = await asyncio.wait_for(run.send("again"), 60)
        third = await asyncio.wait_for(run.send("once more"), 60)
        replies = tool_replies(await run.conversation())
        await run.close()
        await run.result()
    assert "result: 3" in replies["s1"]
    assert "result: 3" in replies["s2"], replies["s2"]
    assert (second.answer, second.tool_calls) == ("two", 3)
    assert third.answer == "three"
    failed = replies["s3"]
    assert failed.startswith("Error:") and "max_tool_calls (3) reached" in failed
    # Two of its three calls ran, the third was refused: the reply says so, never that
    # all three "did run".
    assert "after 3 host call(s), of which 2 did run" in failed
    assert "1 did not" in failed and "which did run" not in failed
    assert ran == [1, 2, 1, 2, 1, 2]


async def test_a_script_that_prints_too_much_is_told_the_output_limit(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    chatty = "for i in range(10_000):\n    print('line', i)"
    hog = "blocks = []\nwhile True:\n    blocks.append('x' * 100_000)"
    model = write_script(
        tmp_path, [script("chatty", chatty), script("hog", hog), answer("stopped")]
    )
    config = AgentConfig(
        model=model, code_mode=CodeMode(max_output_chars=1_000, max_memory_bytes=8_000_000)
    )
    async with running_worker(client, counting_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("print", config=config)
        result = await asyncio.wait_for(run.result(), 60)
        replies = tool_replies(await run.conversation())
    assert result.final_answer == "stopped"
    chatty_reply = replies["chatty"]
    assert "OutputLimitExceeded: the script printed more than 4,000 bytes" in chatty_reply
    assert "stopped at the output limit: max_output_chars (1,000 characters" in chatty_reply
    assert "max_memory_bytes" not in chatty_reply and "MemoryError" not in chatty_reply
    # The memory limit is still named for a script that does use too much memory.
    assert "memory limit: max_memory_bytes (8,000,000)" in replies["hog"]
