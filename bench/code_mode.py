"""Code mode against plain tool calling: twenty lookups and a computation over them.

    python -m bench.code_mode [--address HOST:PORT]

The model is the fake OpenAI-compatible server of the tests (tests/fake_openai.py), so
what a provider would receive is measured exactly: every request body it gets. Three
scripted behaviours, each ending with the same answer:

- plain, one call per turn: each lookup in its own model turn (as when each depends on
  the one before);
- plain, parallel: all twenty lookups in one turn (`strategy="parallel"`);
- code mode: one `run_script` whose script gathers the twenty lookups and sums them.

Figures: model turns, request bytes sent to the provider (and tokens estimated at four
bytes a token), history events and bytes, wall time (median of `--repeats` runs).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import server_client
from durable_tools import (
    AgentConfig,
    CodeMode,
    DurableTools,
    ExecutionStrategy,
    ToolRegistry,
    build_worker,
)

__all__ = ["measure_code_mode"]

LOOKUPS = 20
RESULTS = Path(__file__).resolve().parent / "results" / "code_mode.json"
"""The committed reference figures, replaced only with `--publish`."""
LOCAL_RESULTS = RESULTS.parent / "local" / RESULTS.name
"""Where a run writes by default (git-ignored)."""
_FAKE = Path(__file__).resolve().parent.parent / "tests" / "fake_openai.py"

SCRIPT = f"""
import asyncio
items = [f"item-{{k}}" for k in range({LOOKUPS})]
rows = await asyncio.gather(*[price(item=i) for i in items])
total = sum(r["cents"] for r in rows)
dearest = max(rows, key=lambda r: r["cents"])
{{"total_cents": total, "dearest": dearest["item"]}}
"""


def _fake() -> Any:
    spec = importlib.util.spec_from_file_location("fake_openai", _FAKE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_openai"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def price(item: str) -> dict[str, Any]:
        """The price of one catalog item, in cents."""
        k = int(item.rsplit("-", 1)[1])
        return {"item": item, "cents": 100 + 37 * k, "currency": "EUR"}

    return tools


def behaviour(mode: str, fake: Any) -> Callable[[Any], dict[str, Any]]:
    """The scripted model: its answer to the n-th request of a run."""
    answer = "The twenty items cost 10,030 cents in all; item-19 is the dearest."
    seen: list[int] = [0]

    def respond(_request: Any) -> dict[str, Any]:
        n = seen[0]
        seen[0] += 1
        if mode == "plain-sequential" and n < LOOKUPS:
            call = fake.tool_call(f"c{n}", "price", json.dumps({"item": f"item-{n}"}))
            return fake.chat_completion(tool_calls=[call])
        if mode == "plain-parallel" and n == 0:
            calls = [
                fake.tool_call(f"c{k}", "price", json.dumps({"item": f"item-{k}"}))
                for k in range(LOOKUPS)
            ]
            return fake.chat_completion(tool_calls=calls)
        if mode == "code-mode" and n == 0:
            call = fake.tool_call("s1", "run_script", json.dumps({"script": SCRIPT}))
            return fake.chat_completion(tool_calls=[call])
        return fake.chat_completion(content=answer)

    return respond


async def _one(client: Any, mode: str, fake: Any) -> dict[str, Any]:
    task_queue = f"bench-code-{uuid.uuid4().hex[:8]}"
    config = AgentConfig(
        model="openai:bench-model",
        instructions="Answer questions about the catalog with the tools.",
        strategy=ExecutionStrategy(mode="parallel" if mode == "plain-parallel" else "sequential"),
        limits={"max_turns": 30, "max_tool_calls": 100, "max_tool_calls_per_turn": 32},
        code_mode=CodeMode() if mode == "code-mode" else None,
    )
    with fake.FakeOpenAIServer(behaviour(mode, fake)) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
        async with build_worker(client, registry(), task_queue=task_queue):
            started = time.perf_counter()
            run = await DurableTools(client, task_queue).start(
                "What do the twenty items cost together, and which is the dearest?",
                config=config,
            )
            result = await run.result()
            wall = time.perf_counter() - started
            history = await run.handle.fetch_history()
        sent = sum(len(r.body) for r in server.requests)
        turns = len(server.requests)
    assert result.status == "completed", result
    return {
        "model_turns": turns,
        "request_bytes": sent,
        "tokens_estimate": sent // 4,
        "history_events": len(history.events),
        "history_bytes": sum(e.ByteSize() for e in history.events),
        "wall_ms": wall * 1000,
    }


async def measure_code_mode(client: Any, repeats: int) -> dict[str, Any]:
    fake = _fake()
    out: dict[str, Any] = {}
    for mode in ("plain-sequential", "plain-parallel", "code-mode"):
        runs = [await _one(client, mode, fake) for _ in range(repeats)]
        figures = dict(runs[-1])
        figures["wall_ms"] = statistics.median(r["wall_ms"] for r in runs)
        out[mode] = figures
    return out


def table(results: dict[str, Any]) -> str:
    rows = [
        "| behaviour | model turns | request bytes | ~tokens sent | history events "
        "| history bytes | wall ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, f in results.items():
        rows.append(
            f"| {mode} | {f['model_turns']} | {f['request_bytes']:,} | "
            f"{f['tokens_estimate']:,} | {f['history_events']} | {f['history_bytes']:,} | "
            f"{f['wall_ms']:.0f} |"
        )
    return "\n".join(rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--address", help="a Temporal server to use (default: start one)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--publish", action="store_true", help=f"replace the committed {RESULTS.name}"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        async with server_client(args.address, Path(data)) as (client, _):
            results = await measure_code_mode(client, args.repeats)
    output = RESULTS if args.publish else LOCAL_RESULTS
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"wrote {output}")


if __name__ == "__main__":
    asyncio.run(main())
