"""Throughput: many concurrent runs of a few tool calls each, durable-tools vs bare."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench._common import Bench, median, tool_steps

__all__ = ["measure_throughput"]


async def _burst(bench: Bench, variant: str, script: str, runs: int, calls: int) -> float:
    started = time.perf_counter()
    if variant == "bare":
        handles = await asyncio.gather(*(bench.start_bare(script, calls) for _ in range(runs)))
        answers = await asyncio.gather(*(h.result() for h in handles))
        assert all(a == f"done after {calls} calls" for a in answers), answers
    else:
        started_runs = await asyncio.gather(
            *(bench.start_durable(script, calls) for _ in range(runs))
        )
        results = await asyncio.gather(*(r.result() for r in started_runs))
        assert all(r.tool_calls == calls for r in results), results
    elapsed = time.perf_counter() - started
    return runs * calls / elapsed


async def measure_throughput(
    bench: Bench, *, runs: int, calls: int, repeats: int
) -> dict[str, Any]:
    script = bench.script(tool_steps(calls))
    samples: dict[str, list[float]] = {"bare": [], "durable": []}
    for r in range(repeats):
        order = ["bare", "durable"] if r % 2 == 0 else ["durable", "bare"]
        for variant in order:
            samples[variant].append(await _burst(bench, variant, script, runs, calls))
    rate = {name: median(values) for name, values in samples.items()}
    return {
        "runs": runs,
        "calls_per_run": calls,
        "repeats": repeats,
        "tool_calls_per_second": rate,
        "samples": {k: [round(v, 1) for v in vs] for k, vs in samples.items()},
        "ratio_durable_to_bare": rate["durable"] / rate["bare"],
    }
