"""`python -m bench.profile`: where a turn's time and CPU go, durable-tools vs the bare loop.

Runs `--runs` scripted runs of `--calls` sequential tool calls (one a turn) for each
variant, interleaved, on a dev server of its own, and prints per call: wall ms, this
process's CPU ms (client and workers; the server is another process), and history events
and bytes. Run it under a sampling profiler to see which functions the CPU goes to:

    py-spy record -r 250 -f raw -o /tmp/turns.txt -- python -m bench.profile --only durable
    python -m bench.profile --summarize /tmp/turns.txt
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import tempfile
import time
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType

from bench._common import Bench, server_client, tool_steps

__all__ = ["cpu_per_call", "summarize"]

VARIANTS = ("bare", "durable", "durable_local")


async def cpu_per_call(
    bench: Bench, *, calls: int, runs: int, only: tuple[str, ...] = VARIANTS
) -> dict[str, dict[str, Any]]:
    """Median wall ms and process CPU ms per call, and history size, for each variant."""
    script = bench.script(tool_steps(calls))
    start = {
        "bare": lambda: bench.run_bare(script, calls),
        "durable": lambda: bench.run_durable(script, calls),
        "durable_local": lambda: bench.run_durable(script, calls, local=True),
    }
    for name in only:  # warm-up
        await start[name]()
    wall: dict[str, list[float]] = {name: [] for name in only}
    cpu: dict[str, list[float]] = {name: [] for name in only}
    last: dict[str, Any] = {}
    for r in range(runs):
        order = list(only[r % len(only) :] + only[: r % len(only)])
        for name in order:
            w0, c0 = time.perf_counter(), time.process_time()
            last[name] = await start[name]()
            wall[name].append((time.perf_counter() - w0) * 1000 / calls)
            cpu[name].append((time.process_time() - c0) * 1000 / calls)
    out: dict[str, dict[str, Any]] = {}
    for name in only:
        history = await last[name].fetch_history()
        kinds = collections.Counter(
            EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events
        )
        out[name] = {
            "events_by_type": dict(sorted(kinds.items())),
            "wall_ms_per_call": sorted(wall[name])[len(wall[name]) // 2],
            "cpu_ms_per_call": sorted(cpu[name])[len(cpu[name]) // 2],
            "history_events": len(history.events),
            "history_bytes": sum(e.ByteSize() for e in history.events),
        }
    return out


def summarize(raw: Path, *, top: int = 25) -> str:
    """Self and inclusive sample shares from a py-spy `--format raw` (collapsed) file."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].split("/")[-1] + ")"
            if " (" in f
            else f
            for f in stack.split(";")
        ]
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    lines = [f"{total} samples", "", "inclusive:"]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    lines += ["", "self:"]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> int:
    if args.summarize:
        print(summarize(Path(args.summarize), top=args.top))
        return 0
    with tempfile.TemporaryDirectory(prefix="durable-tools-profile-", dir=args.data_dir) as tmp:
        async with server_client(args.address, Path(tmp)) as (client, _):
            bench = Bench(client, Path(tmp))
            async with bench.workers():
                figures = await cpu_per_call(
                    bench, calls=args.calls, runs=args.runs, only=tuple(args.only)
                )
    print(f"{'variant':<15}{'wall ms/call':>14}{'CPU ms/call':>13}{'events':>8}{'bytes':>9}")
    for name, f in figures.items():
        print(
            f"{name:<15}{f['wall_ms_per_call']:>14.1f}{f['cpu_ms_per_call']:>13.2f}"
            f"{f['history_events']:>8.0f}{f['history_bytes']:>9,.0f}"
        )
    kinds = sorted({k for f in figures.values() for k in f["events_by_type"]})
    print(f"\n{'history events of one run':<45}" + "".join(f"{n:>15}" for n in figures))
    for kind in kinds:
        counts = "".join(f"{f['events_by_type'].get(kind, 0):>15}" for f in figures.values())
        print(f"{kind:<45}{counts}")
    return 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--address")
    parser.add_argument("--data-dir")
    parser.add_argument("--summarize", help="summarize a py-spy raw file instead")
    parser.add_argument("--top", type=int, default=25)
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
