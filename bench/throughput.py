"""Throughput: many concurrent runs of a few tool calls each, durable-tools vs bare.

Besides the rate (noisy on a shared machine), the burst's histories are counted: events per
run by type, which load does not move unless the code does something per turn that depends
on timing (runs used to re-read their catalog before most turns once a turn cycle passed
a second; a local activity and a marker each).
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

from temporalio.api.enums.v1 import EventType

from bench._common import Bench, median, tool_steps

__all__ = ["events_by_type", "measure_throughput"]


async def events_by_type(handles: list[Any]) -> dict[str, float]:
    """Mean history events per run, by type (`EVENT_TYPE_` left out)."""
    counts: collections.Counter[str] = collections.Counter()
    for handle in handles:
        history = await handle.fetch_history()
        counts.update(
            EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events
        )
    return {kind: n / len(handles) for kind, n in sorted(counts.items())}


async def _burst(
    bench: Bench, variant: str, script: str, runs: int, calls: int
) -> tuple[float, list[Any]]:
    """Tool calls a second over `runs` runs started at once, and the runs' handles."""
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
        handles = [r.handle for r in started_runs]
    elapsed = time.perf_counter() - started
    return runs * calls / elapsed, handles


async def measure_throughput(
    bench: Bench, *, runs: int, calls: int, repeats: int
) -> dict[str, Any]:
    script = bench.script(tool_steps(calls))
    samples: dict[str, list[float]] = {"bare": [], "durable": []}
    cpu: dict[str, list[float]] = {"bare": [], "durable": []}
    last: dict[str, list[Any]] = {}
    for r in range(repeats):
        order = ["bare", "durable"] if r % 2 == 0 else ["durable", "bare"]
        for variant in order:
            cpu_before = time.process_time()
            rate_of_burst, last[variant] = await _burst(bench, variant, script, runs, calls)
            cpu[variant].append((time.process_time() - cpu_before) * 1000 / (runs * calls))
            samples[variant].append(rate_of_burst)
    rate = {name: median(values) for name, values in samples.items()}
    events = {name: await events_by_type(handles) for name, handles in last.items()}
    return {
        "runs": runs,
        "calls_per_run": calls,
        "repeats": repeats,
        "tool_calls_per_second": rate,
        "samples": {k: [round(v, 1) for v in vs] for k, vs in samples.items()},
        "ratio_durable_to_bare": rate["durable"] / rate["bare"],
        "cpu_ms_per_call": {name: median(values) for name, values in cpu.items()},
        "cpu_samples": {k: [round(v, 2) for v in vs] for k, vs in cpu.items()},
        "events_per_run": {name: sum(kinds.values()) for name, kinds in events.items()},
        "events_per_run_by_type": events,
    }
