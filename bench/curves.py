"""Capacity curves: tool calls/s and per-call latency against concurrent runs.

At each level, `runs` runs of `calls` sequential tool calls start at once, durable-tools
and the bare loop in turn (alternating which goes first). Throughput is tool calls over
the wall time from the first start to the last result; a call's latency is its run's wall
time (start to result) divided by its calls, so the percentiles are over runs.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import Bench, tool_steps

__all__ = ["measure_curves", "plot_curves"]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))  # nearest rank
    return ordered[index]


STARTS_IN_FLIGHT = 50
"""Start requests sent at once: hundreds at a time time out on a loaded dev server."""


async def _level(bench: Bench, variant: str, script: str, runs: int, calls: int) -> dict[str, Any]:
    per_call: list[float] = []
    gate = asyncio.Semaphore(STARTS_IN_FLIGHT)

    async def one() -> None:
        async with gate:
            began = time.perf_counter()
            if variant == "bare":
                handle = await bench.start_bare(script, calls)
            else:
                handle = (await bench.start_durable(script, calls)).handle
        result = await handle.result()
        done = result == f"done after {calls} calls" if variant == "bare" else None
        if done is False or (done is None and result.tool_calls != calls):
            raise RuntimeError(f"{variant} run {handle.id} ended badly: {result}")
        per_call.append((time.perf_counter() - began) * 1000 / calls)

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(runs)))
    elapsed = time.perf_counter() - started
    return {
        "tool_calls_per_second": runs * calls / elapsed,
        "p50_ms": _percentile(per_call, 50),
        "p95_ms": _percentile(per_call, 95),
        "p99_ms": _percentile(per_call, 99),
    }


async def measure_curves(
    bench: Bench,
    *,
    levels: list[int],
    calls: int,
    tick: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    script = bench.script(tool_steps(calls))
    points: dict[str, list[dict[str, Any]]] = {"bare": [], "durable": []}
    for i, runs in enumerate(levels):
        order = ["bare", "durable"] if i % 2 == 0 else ["durable", "bare"]
        for variant in order:
            point = await _level(bench, variant, script, runs, calls)
            points[variant].append({"runs": runs, **point})
            tick()
    return {"levels": levels, "calls_per_run": calls, "points": points}


def plot_curves(curves: dict[str, Any], out_dir: Path) -> list[Path]:
    """Write the throughput and latency PNGs; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    labels = {"durable": "durable-tools", "bare": "hand-written Temporal loop"}
    styles = {"durable": "tab:blue", "bare": "tab:gray"}
    written: list[Path] = []

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for variant, points in curves["points"].items():
        ax.plot(
            [p["runs"] for p in points],
            [p["tool_calls_per_second"] for p in points],
            marker="o",
            color=styles[variant],
            label=labels[variant],
        )
    ax.set_xscale("log")
    ax.set_xlabel("concurrent runs")
    ax.set_ylabel("tool calls / s")
    ax.set_title(f"Throughput ({curves['calls_per_run']} calls a run, one dev server, 2 vCPU)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = out_dir / "bench-throughput.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for variant, points in curves["points"].items():
        runs = [p["runs"] for p in points]
        for q, dash in (("p50", "-"), ("p95", "--"), ("p99", ":")):
            ax.plot(
                runs,
                [p[f"{q}_ms"] for p in points],
                dash,
                marker="o",
                markersize=3,
                color=styles[variant],
                label=f"{labels[variant]} {q}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("concurrent runs")
    ax.set_ylabel("ms per tool call (with its model turn)")
    ax.set_title("Latency per call")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out_dir / "bench-latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written
