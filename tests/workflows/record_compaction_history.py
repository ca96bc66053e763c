"""Record a run with context compaction, for test_replay.py.

`histories/compaction.json`: twelve `lookup` turns (short keys, then long ones) under
`CompactionConfig(window_tokens=600, keep_last=2)` with a model that reports no usage (so
the run estimates) and refuses, as a provider does, any request of more than 8 messages:
the history holds a compaction after the provider's "context too long" and its retry,
then compactions at the threshold, and the compacted view sent with every later model
call. Re-record only for compatible changes:

    .venv/bin/python tests/workflows/record_compaction_history.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_histories import recording_env, registry, save

from durable_tools import AgentConfig, CompactionConfig, DurableTools, Limits, Message, ToolCall
from durable_tools.messages import ModelRequest, ModelResponse
from durable_tools.models import ModelError, register_model_adapter, unregister_model_adapter
from support import running_worker

TURNS = 12
MOST_MESSAGES = 8


class Refusing:
    """Looks a key up each turn, then answers; refuses more than `MOST_MESSAGES`."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        first = request.messages[0]
        if first.role == "system" and (first.content or "").startswith("You summarise"):
            return ModelResponse(message=Message(role="assistant", content="keys k0-k9 seen"))
        if len(request.messages) > MOST_MESSAGES:
            raise ModelError(
                "the conversation exceeds the model's context window",
                retryable=False,
                context_exceeded=True,
            )
        if request.turn < TURNS:
            arguments = json.dumps({"key": f"k{request.turn}" * (40 if request.turn < 6 else 100)})
            call = ToolCall(id=f"c{request.turn}", name="lookup", arguments=arguments)
            return ModelResponse(message=Message(role="assistant", tool_calls=[call]))
        return ModelResponse(message=Message(role="assistant", content="looked up"))


async def main(name: str) -> None:
    register_model_adapter("refusing", lambda _rest: Refusing(), replace=True)
    try:
        async with recording_env() as (client, _):
            config = AgentConfig(
                model="refusing:model",
                instructions="Look keys up.",
                limits=Limits(max_turns=TURNS + 1),
                compaction=CompactionConfig(window_tokens=600, keep_last=2),
            )
            task_queue = f"record-{uuid.uuid4()}"
            async with running_worker(client, registry(), task_queue):
                run = await DurableTools(client, task_queue).start(
                    "look", config=config, run_id=name
                )
                print(await run.result())
                print([e.event for e in await run.events() if e.event.startswith("context.")])
                save(name, await run.handle.fetch_history())
    finally:
        unregister_model_adapter("refusing")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "compaction"))
