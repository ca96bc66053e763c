"""Overhead per tool call: durable-tools (regular and local tools) vs the bare loop.

One run = N sequential tool calls (one a turn) and a final answer. The variants run
interleaved, in a rotating order, so drift on a shared machine hits all of them alike;
the figure is the median of the repeats.
"""

from __future__ import annotations

import time
from typing import Any

from bench._common import Bench, median, timed, tool_steps

__all__ = ["measure_latency"]


async def measure_latency(bench: Bench, *, calls: int, repeats: int) -> dict[str, Any]:
    script = bench.script(tool_steps(calls))
    variants = {
        "bare": lambda: bench.run_bare(script, calls),
        "durable": lambda: bench.run_durable(script, calls),
        "durable_local": lambda: bench.run_durable(script, calls, local=True),
        "durable_no_summaries": lambda: bench.run_durable(script, calls, summaries=False),
    }
    for run in variants.values():  # warm-up: imports, sandbox, connections
        await run()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            before = time.process_time()  # this process: client and workers, not the server
            samples[name].append(await timed(variants[name]) * 1000 / calls)
            cpu[name].append((time.process_time() - before) * 1000 / calls)
    ms = {name: median(values) for name, values in samples.items()}
    return {
        "calls_per_run": calls,
        "repeats": repeats,
        "ms_per_call": ms,
        "cpu_ms_per_call": {name: median(values) for name, values in cpu.items()},
        "samples_ms_per_call": {k: [round(v, 2) for v in vs] for k, vs in samples.items()},
        "ratio_durable_to_bare": ms["durable"] / ms["bare"],
        "ratio_local_to_bare": ms["durable_local"] / ms["bare"],
        "ratio_local_to_durable": ms["durable_local"] / ms["durable"],
        "ratio_no_summaries_to_bare": ms["durable_no_summaries"] / ms["bare"],
    }
