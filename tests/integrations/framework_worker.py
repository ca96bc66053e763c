"""A worker process running an agent framework on durable-tools' runtime, for the crash
test (test_framework_crash.py).

    FRAMEWORK=pydantic_ai python tests/integrations/framework_worker.py ADDRESS QUEUE WORK_DIR

`FRAMEWORK` is `pydantic_ai` or `openai_agents` (whose model is the OpenAI-compatible
server at `FAKE_OPENAI_URL`, over the Responses API). The `pay` tool appends one line per
payment to `WORK_DIR/effects.jsonl`. Prints `ready` once polling; polls until killed (or
ten minutes pass).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: framework_support

from crash_hosts import effect_registry
from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.worker import Worker

from durable_tools import build_worker, connect


async def _pydantic_ai_worker(address: str, task_queue: str, work: Path) -> Worker:
    from crash_hosts import CrashPayerWorkflow, crash_payer
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    client = await connect(address, plugins=[PydanticAIPlugin()])
    return build_worker(
        client,
        effect_registry(work),
        task_queue=task_queue,
        workflows=[CrashPayerWorkflow],
        plugins=[AgentPlugin(crash_payer)],
    )


async def _openai_agents_worker(address: str, task_queue: str, work: Path) -> Worker:
    from agents import OpenAIProvider
    from crash_openai_host import OpenAICrashPayerWorkflow
    from temporalio.openai_agents import OpenAIAgentsPlugin

    provider = OpenAIProvider(
        api_key="sk-fake", base_url=os.environ["FAKE_OPENAI_URL"], use_responses=True
    )
    client = await Client.connect(
        address,
        data_converter=DataConverter(),  # the plugin sets its own payload converter
        plugins=[OpenAIAgentsPlugin(model_provider=provider)],
    )
    return build_worker(
        client, effect_registry(work), task_queue=task_queue, workflows=[OpenAICrashPayerWorkflow]
    )


async def main(address: str, task_queue: str, work: Path) -> None:
    if os.environ["FRAMEWORK"] == "openai_agents":
        worker = await _openai_agents_worker(address, task_queue, work)
    else:
        worker = await _pydantic_ai_worker(address, task_queue, work)
    async with worker:
        print("ready", flush=True)
        started = time.monotonic()
        while time.monotonic() - started < 600:  # never outlive a stuck test by much
            await asyncio.sleep(1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
