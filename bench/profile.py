"""`python -m bench.profile`: where a turn's time and CPU go, durable-tools vs the bare loop.

Runs `--runs` scripted runs of `--calls` sequential tool calls (one a turn) for each
variant, interleaved, on a dev server of its own, and prints per call: wall ms, this
process's CPU ms (client and workers; the server is another process), and history events
and bytes; then the CPU per call of each kind of thread (from /proc: the event loop, the
workflow threads, the `to_thread` pool, the SDK core's threads), and, with `--breakdown`,
the event loop thread's CPU split by what it was doing (a cProfile of that thread in
thread CPU time, the warm-up runs left out; the profiler's own cost inflates every row
alike, so read the shares, not the sum). Or run it under a sampling profiler:

    py-spy record -r 250 -f raw -o /tmp/turns.txt -- python -m bench.profile --only durable
    python -m bench.profile --summarize /tmp/turns.txt
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import json
import pstats
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType

from bench._common import Bench, server_client, tool_steps

__all__ = ["EVENT_LOOP_PARTS", "cpu_per_call", "summarize", "thread_cpu"]

VARIANTS = ("bare", "durable", "durable_local")

THREAD_KINDS = {
    "MainThread": "event loop (client, activities, SDK bridge)",
    "temporal_workflow": "workflow threads (workflow code, sandbox)",
    "asyncio": "to_thread pool (sync tools, store writes)",
}
CORE_THREADS = "SDK core (Rust threads)"


def _kind(name: str | None) -> str:
    if name is None:
        return CORE_THREADS  # not a Python thread
    return next((kind for prefix, kind in THREAD_KINDS.items() if name.startswith(prefix)), name)


def thread_cpu() -> collections.Counter[str]:
    """CPU seconds this process's threads have run so far, summed by kind of thread.

    From `/proc/self/task/*/schedstat` (nanoseconds on a CPU): unlike the tick counts of
    `stat`, precise enough to split a few milliseconds a call.
    """
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: collections.Counter[str] = collections.Counter()
    for task in Path("/proc/self/task").iterdir():
        try:
            ran_ns = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
        out[_kind(names.get(int(task.name)))] += ran_ns / 1e9
    return out


EVENT_LOOP_PARTS: dict[str, tuple[str, str]] = {
    "workflow activations (SDK, on the event loop)": (
        "temporalio/worker/_workflow.py",
        "_handle_activation",
    ),
    "  payload visitor (decode + encode, converters)": ("temporalio/bridge/_visitor.py", "visit"),
    "  of which activity summaries (UserMetadata)": (
        "temporalio/bridge/_visitor.py",
        "_visit_temporal_api_sdk_v1_UserMetadata",
    ),
    "activity tasks (SDK + activity code)": (
        "temporalio/worker/_activity.py",
        "_handle_start_activity_task",
    ),
    "  tool activity body (durable-tools)": ("durable_tools/_activities/_tools.py", "run_tool"),
    "    arguments parsed + schema-checked": (
        "durable_tools/tools/_validation.py",
        "validate_arguments",
    ),
    "    tool events (started/completed)": ("durable_tools/tools/_registry.py", "emit"),
    "  model activity body (durable-tools)": ("durable_tools/_activities/_core.py", "model"),
    "  model activity body (bare)": ("bench/bare_workflow.py", "model"),
    "  tool activity body (bare)": ("bench/bare_workflow.py", "run_tool"),
    "client: start a run": ("bench/_common.py", "start_durable"),
    "client: start a run (bare)": ("bench/_common.py", "start_bare"),
}
"""Rows of the event loop's breakdown: a label and the (file, function) whose inclusive
thread CPU it is. Indented rows are part of the row above."""


def _breakdown(profile: cProfile.Profile, calls: int) -> dict[str, float]:
    """Inclusive thread CPU ms per call of each `EVENT_LOOP_PARTS` row, and the total."""
    stats = pstats.Stats(profile)
    found: dict[str, float] = {}
    for label, (file, function) in EVENT_LOOP_PARTS.items():
        seconds = sum(
            row[3]  # cumulative time
            for (path, _, name), row in stats.stats.items()  # type: ignore[attr-defined]
            if path.endswith(file) and name == function
        )
        if seconds:
            found[label] = seconds * 1000 / calls
    found["event loop thread, total (profiled)"] = stats.total_tt * 1000 / calls  # type: ignore[attr-defined]
    return found


async def cpu_per_call(
    bench: Bench,
    *,
    calls: int,
    runs: int,
    only: tuple[str, ...] = VARIANTS,
    breakdown: bool = False,
    dump: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Median wall ms and process CPU ms per call, and history size, for each variant;
    the mean CPU ms per call of each kind of thread; with `breakdown`, the event loop
    thread's CPU by part (`EVENT_LOOP_PARTS`, under cProfile: the wall and CPU figures
    then include the profiler's cost), and the profiles dumped to `dump`.VARIANT.pstats."""
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
    threads: dict[str, collections.Counter[str]] = {name: collections.Counter() for name in only}
    profiles = {name: cProfile.Profile(time.thread_time) for name in only}
    last: dict[str, Any] = {}
    for r in range(runs):
        order = list(only[r % len(only) :] + only[: r % len(only)])
        for name in order:
            t0 = thread_cpu()
            if breakdown:
                profiles[name].enable()
            w0, c0 = time.perf_counter(), time.process_time()
            last[name] = await start[name]()
            wall[name].append((time.perf_counter() - w0) * 1000 / calls)
            cpu[name].append((time.process_time() - c0) * 1000 / calls)
            if breakdown:
                profiles[name].disable()
            threads[name].update(thread_cpu())
            threads[name].subtract(t0)
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
            "thread_cpu_ms_per_call": {
                kind: seconds * 1000 / (calls * runs)
                for kind, seconds in sorted(threads[name].items())
                if seconds > 0
            },
        }
        if breakdown:
            out[name]["event_loop_ms_per_call"] = _breakdown(profiles[name], calls * runs)
            if dump:
                profiles[name].dump_stats(f"{dump}.{name}.pstats")
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
                    bench,
                    calls=args.calls,
                    runs=args.runs,
                    only=tuple(args.only),
                    breakdown=args.breakdown or bool(args.pstats),
                    dump=args.pstats,
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
    for key, title in (
        ("thread_cpu_ms_per_call", "CPU ms per call, by thread"),
        ("event_loop_ms_per_call", "event loop thread CPU ms per call (cProfile, inclusive)"),
    ):
        rows = list(dict.fromkeys(k for f in figures.values() for k in f.get(key, {})))
        if rows:
            print(f"\n{title:<55}" + "".join(f"{n:>15}" for n in figures))
            for row in rows:
                cells = "".join(f"{f.get(key, {}).get(row, 0.0):>15.2f}" for f in figures.values())
                print(f"{row:<55}{cells}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
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
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also split the event loop thread's CPU by part (cProfile: slower)",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--pstats", help="with the breakdown, dump each variant's profile to PREFIX.VARIANT.pstats"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
