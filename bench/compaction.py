"""`python -m bench.compaction [TURNS] [PAGE_CHARS] [WINDOW]`: tokens sent per turn, with
and without context compaction.

Runs the same agent twice on a dev server of its own: TURNS turns, each reading a page of
PAGE_CHARS characters through a tool, then an answer. The model is an in-process adapter
that counts what each request sends (its messages and tool definitions as JSON, 4
characters a token, as the fake providers of the tests do) and reports that count as its
input tokens, so the run decides from reported usage as it would with a real provider.
Once without compaction (the model's window is taken as unbounded), once with
`CompactionConfig(window_tokens=WINDOW)` and its defaults. Prints the tokens sent at each
turn, the totals and the summariser's share, and writes them to
`bench/results/compaction.json`.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench._common import machine, server_client
from durable_tools import (
    AgentConfig,
    CompactionConfig,
    DurableTools,
    Limits,
    Message,
    RunStatus,
    ToolCall,
    ToolRegistry,
    build_worker,
)
from durable_tools.messages import ModelRequest, ModelResponse, Usage
from durable_tools.models import register_model_adapter, unregister_model_adapter
from durable_tools.tools import FileSystemArtifactStore

__all__ = ["main"]

PREFIX = "bench-counting"
RESULTS = Path(__file__).parent / "results" / "compaction.json"


def sent_tokens(request: ModelRequest) -> int:
    """What a request sends the model, in tokens (4 characters a token)."""
    body = {
        "messages": [m.model_dump(mode="json", exclude_none=True) for m in request.messages],
        "tools": [t.model_dump(mode="json") for t in request.tools],
    }
    return math.ceil(len(json.dumps(body)) / 4)


class CountingModel:
    """Reads pages until `turns`, then answers; writes summaries when asked. Counts
    every request's tokens by run: `agent[run]` per turn, `summaries[run]` per summary."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.agent: dict[str, list[int]] = defaultdict(list)
        self.summaries: dict[str, list[int]] = defaultdict(list)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        used = sent_tokens(request)
        first = request.messages[0]
        if first.role == "system" and (first.content or "").startswith("You summarise"):
            self.summaries[request.run_id].append(used)
            text = f"Summary {len(self.summaries[request.run_id])}: pages read so far. " * 8
            return ModelResponse(
                message=Message(role="assistant", content=text),
                usage=Usage(input_tokens=used, output_tokens=len(text) // 4),
            )
        self.agent[request.run_id].append(used)
        turn = request.turn + 1
        if turn <= self.turns:
            call = ToolCall(id=f"p{turn}", name="page", arguments=json.dumps({"n": turn}))
            message = Message(role="assistant", tool_calls=[call])
        else:
            message = Message(role="assistant", content=f"read {self.turns} pages")
        return ModelResponse(message=message, usage=Usage(input_tokens=used, output_tokens=20))


async def main(turns: int, page_chars: int, window: int) -> dict[str, Any]:
    model = CountingModel(turns)
    register_model_adapter(PREFIX, lambda _rest: model, replace=True)
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def page(n: int) -> str:
        """Read page n of a long document."""
        return f"page {n}: " + "x" * page_chars

    figures: dict[str, Any] = {"turns": turns, "page_chars": page_chars, "window": window}
    try:
        with tempfile.TemporaryDirectory() as work:
            async with server_client(None, Path(work)) as (client, _):
                queue = f"bench-compaction-{uuid.uuid4().hex[:8]}"
                store = FileSystemArtifactStore(Path(work) / "artifacts")
                async with build_worker(client, registry, task_queue=queue, artifact_store=store):
                    dt = DurableTools(client, queue)
                    for name, compaction in (
                        ("without", None),
                        ("with", CompactionConfig(window_tokens=window)),
                    ):
                        config = AgentConfig(
                            model=f"{PREFIX}:pages",
                            instructions="Read every page, then say how many you read.",
                            limits=Limits(max_turns=turns + 1, max_tool_calls=turns),
                            compaction=compaction,
                        )
                        run = await dt.start("read the document", config=config)
                        result = await run.result()
                        if result.status != RunStatus.COMPLETED:
                            raise RuntimeError(f"{name} compaction: {result}")
                        per_turn = model.agent[run.run_id]
                        summaries = model.summaries[run.run_id]
                        figures[name] = {
                            "per_turn": per_turn,
                            "max": max(per_turn),
                            "total": sum(per_turn),
                            "compactions": len(summaries),
                            "summariser_total": sum(summaries),
                        }
    finally:
        unregister_model_adapter(PREFIX)
    figures["machine"] = machine()
    return figures


def report(figures: dict[str, Any]) -> None:
    without, with_ = figures["without"], figures["with"]
    print(f"{figures['turns']} turns, pages of {figures['page_chars']:,} characters")
    print(f"window {figures['window']:,} tokens, compaction at 80%\n")
    print("turn  without  with")
    for turn, (a, b) in enumerate(zip(without["per_turn"], with_["per_turn"], strict=True), 1):
        if turn == 1 or turn % 10 == 0 or turn == len(without["per_turn"]):
            print(f"{turn:>4}  {a:>7,}  {b:>6,}")
    print(f"\nlargest request: {without['max']:,} vs {with_['max']:,} tokens")
    print(
        f"all requests: {without['total']:,} vs {with_['total']:,} tokens "
        f"(+ {with_['summariser_total']:,} for {with_['compactions']} summaries)"
    )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    turns, page_chars, window = (args + [60, 4_000, 32_000][len(args) :])[:3]
    result = asyncio.run(main(turns, page_chars, window))
    report(result)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
