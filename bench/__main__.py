"""`python -m bench [--quick | --scale] [--address HOST:PORT] [--only NAME ...] [--publish]`.

Shows a progress bar, prints the ratio table (durable-tools against a hand-written Temporal
loop measured in the same run), and writes the figures (JSON) and the curves (PNG) to
bench/results/local/, which git ignores: running the bench leaves the tree as it was. The
committed reference figures (bench/results/latest.json or scale.json, and the curves in
docs/) change only with `--publish` (`make bench-publish`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench._common import Bench, machine, server_client
from bench._logs import core_logs_to_stderr
from bench.curves import measure_curves, plot_curves
from bench.history import measure_history
from bench.latency import measure_latency
from bench.paused import measure_paused
from bench.scale import measure_long_run, measure_recovery
from bench.throughput import measure_throughput

RESULTS = Path(__file__).resolve().parent / "results"
LOCAL = RESULTS / "local"
"""Where a run writes by default (git-ignored)."""
DOCS = Path(__file__).resolve().parent.parent / "docs"
BENCHMARKS = ("latency", "throughput", "history", "curves", "long_run", "paused", "recovery")

FULL = {
    "latency": {"calls": 20, "repeats": 7},
    "throughput": {"runs": 50, "calls": 5, "repeats": 2},
    "history": {"short": 2, "long": 10, "big": 1_000_000},
    "curves": {"levels": [1, 10, 50, 200], "calls": 5},
    "long_run": {"turns": 200, "after_events": 1000},
    "paused": {"runs": 1000, "max_cached": 100},
    "recovery": {"runs": 100, "calls": 10},
}
QUICK = {
    "latency": {"calls": 10, "repeats": 3},
    "throughput": {"runs": 20, "calls": 3, "repeats": 1},
    "history": {"short": 2, "long": 10, "big": 1_000_000},  # the 10-turn workload
    "curves": {"levels": [1, 10], "calls": 3},
    "long_run": {"turns": 30, "after_events": 200},
    "paused": {"runs": 50, "max_cached": 10},
    "recovery": {"runs": 10, "calls": 3},
}
SCALE = {
    **FULL,
    "curves": {"levels": [1, 10, 50, 100, 200, 500], "calls": 5},
    "long_run": {"turns": 1000, "after_events": 1000},
    "paused": {"runs": 10_000, "max_cached": 100},
    "recovery": {"runs": 1000, "calls": 10},
}
SCALE_REDUCED = {
    **SCALE,
    "curves": {"levels": [1, 10, 50, 100], "calls": 3},
    "paused": {"runs": 200, "max_cached": 100},
    "recovery": {"runs": 30, "calls": 3},
}
"""`--scale --reduced`: the capacity suite at sizes a shared 2-core machine gets through."""
DEFAULT_DATA_DIR = "/dev/shm" if Path("/dev/shm").is_dir() else None
REPEATED = ("latency", "throughput")
"""The benchmarks whose figure is a median over repeats (`--repeats`)."""
CURVE_TARGET_LEVELS = (50, 200)
"""Levels of the curve held to the throughput target (>= 0.95x the bare loop, issue #33)."""
EXTRA_EVENTS_PER_RUN = 2
"""History events a durable-tools run may have over the bare loop's, however loaded: the
catalog's marker and the final status upsert (what operators filter on)."""
QUICK_SKIPS = ("recovery",)
"""Left out of `--quick` unless named with --only: a server restart does not fit a minute."""


def _row(name: str, durable: str, bare: str, ratio: str, target: str, verdict: str) -> list[str]:
    return [name, durable, bare, ratio, target, verdict]


def table(results: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    if "latency" in results:
        lat = results["latency"]
        ms = lat["ms_per_call"]
        ratio = lat["ratio_durable_to_bare"]
        rows.append(
            _row(
                f"overhead per tool call ({lat['calls_per_run']} sequential calls), ms",
                f"{ms['durable']:.1f}",
                f"{ms['bare']:.1f}",
                f"{ratio:.2f}x",
                "<= 1.05x",
                "ok" if ratio <= 1.05 else "MISSED",
            )
        )
        cpu = lat["cpu_ms_per_call"]
        extra = cpu["durable"] - cpu["bare"]
        rows.append(
            _row(
                "  Python CPU per call (client + workers), ms",
                f"{cpu['durable']:.1f}",
                f"{cpu['bare']:.1f}",
                f"{extra:+.1f} ms",
                "<= bare + 1 ms",
                "ok" if extra <= 1 else "MISSED",
            )
        )
        if "durable_no_summaries" in ms:
            quiet = lat["ratio_no_summaries_to_bare"]
            rows.append(
                _row(
                    "  same, activity_summaries=False, ms",
                    f"{ms['durable_no_summaries']:.1f}",
                    f"{ms['bare']:.1f}",
                    f"{quiet:.2f}x",
                    "<= 1.05x",
                    "ok" if quiet <= 1.05 else "MISSED",
                )
            )
        rows.append(
            _row(
                "local tool (local=True) per tool call, ms",
                f"{ms['durable_local']:.1f}",
                f"{ms['bare']:.1f}",
                f"{lat['ratio_local_to_bare']:.2f}x bare, "
                f"{lat['ratio_local_to_durable']:.2f}x regular",
                "-",
                "",
            )
        )
    if "throughput" in results:
        thr = results["throughput"]
        rate = thr["tool_calls_per_second"]
        rows.append(
            _row(
                f"throughput ({thr['runs']} concurrent runs x {thr['calls_per_run']} calls), "
                "tool calls/s",
                f"{rate['durable']:.0f}",
                f"{rate['bare']:.0f}",
                f"{thr['ratio_durable_to_bare']:.2f}x",
                ">= 0.95x",
                "ok" if thr["ratio_durable_to_bare"] >= 0.95 else "MISSED",
            )
        )
        if "cpu_ms_per_call" in thr:
            cpu = thr["cpu_ms_per_call"]
            rows.append(
                _row(
                    "  Python CPU per call in the burst (runs' start included), ms",
                    f"{cpu['durable']:.1f}",
                    f"{cpu['bare']:.1f}",
                    f"{cpu['durable'] - cpu['bare']:+.1f} ms",
                    "-",
                    "",
                )
            )
        if "events_per_run" in thr:
            events = thr["events_per_run"]
            extra = events["durable"] - events["bare"]
            rows.append(
                _row(
                    "  history events per run in the burst",
                    f"{events['durable']:.2f}",
                    f"{events['bare']:.2f}",
                    f"{extra:+.2f}",
                    f"<= bare + {EXTRA_EVENTS_PER_RUN}",
                    "ok" if extra <= EXTRA_EVENTS_PER_RUN else "MISSED",
                )
            )
    if "history" in results:
        his = results["history"]
        d, b = his["durable"], his["bare"]
        rows.append(
            _row(
                "history events per tool call (small output)",
                f"{d['events_per_call']:.1f}",
                f"{b['events_per_call']:.1f}",
                f"{d['events_per_call'] / b['events_per_call']:.2f}x",
                "-",
                "",
            )
        )
        rows.append(
            _row(
                "history bytes per tool call (small output)",
                f"{d['bytes_per_call']:,.0f}",
                f"{b['bytes_per_call']:,.0f}",
                f"{d['bytes_per_call'] / b['bytes_per_call']:.2f}x",
                "<= bare",
                "ok" if d["bytes_per_call"] <= b["bytes_per_call"] else "MISSED",
            )
        )
        db, bb = his["durable_big"], his["bare_big"]
        bounded = db["bytes_per_call"] < 64_000
        rows.append(
            _row(
                f"history bytes per tool call ({his['big_output_bytes'] / 1e6:.0f} MB output)",
                f"{db['bytes_per_call']:,.0f}",
                f"{bb['bytes_per_call']:,.0f}",
                f"{db['bytes_per_call'] / bb['bytes_per_call']:.3f}x",
                "bounded (artifact)",
                "ok" if bounded else "MISSED",
            )
        )
    if "curves" in results:
        cur = results["curves"]
        for dur, bare in zip(cur["points"]["durable"], cur["points"]["bare"], strict=True):
            rate = dur["tool_calls_per_second"] / bare["tool_calls_per_second"]
            held = dur["runs"] in CURVE_TARGET_LEVELS
            rows.append(
                _row(
                    f"curve: {dur['runs']} concurrent runs, tool calls/s (p95 ms/call)",
                    f"{dur['tool_calls_per_second']:.0f} ({dur['p95_ms']:.0f})",
                    f"{bare['tool_calls_per_second']:.0f} ({bare['p95_ms']:.0f})",
                    f"{rate:.2f}x",
                    ">= 0.95x" if held else "-",
                    ("ok" if rate >= 0.95 else "MISSED") if held else "",
                )
            )
    if "long_run" in results:
        lr = results["long_run"]
        rows.append(
            _row(
                f"{lr['turns']}-turn run: total s, runs in chain, max events a run",
                f"{lr['seconds']:.0f} s, {lr['runs_in_chain']}, {lr['max_events_per_run']}",
                "-",
                f"{lr['ms_per_turn']:.0f} ms/turn",
                "bounded history",
                "ok"
                if lr["max_events_per_run"] <= lr["continue_as_new_after_events"] + 60
                else "MISSED",
            )
        )
    if "paused" in results:
        pau = results["paused"]
        rows.append(
            _row(
                f"worker RSS per paused run ({pau['runs']} runs, cache "
                f"{pau['max_cached_workflows']}), MB",
                f"{pau['mb_per_paused_run']:.3f}",
                "-",
                f"idle {pau['idle_rss_mb']:.0f} MB -> {pau['paused_rss_mb']:.0f} MB",
                "-",
                "",
            )
        )
        rows.append(
            _row(
                f"`pending` listing {pau['runs']} paused runs, s",
                f"{pau['seconds_to_list_pending']:.2f}",
                "-",
                "-",
                "-",
                "",
            )
        )
    if "recovery" in results:
        rec = results["recovery"]
        rows.append(
            _row(
                f"recovery: {rec['runs']} runs in flight, server restart; s to first / all done",
                f"{rec['seconds_to_first_completion']:.1f} / "
                f"{rec['seconds_until_all_completed']:.1f}",
                "-",
                f"restart {rec['restart_seconds']:.1f} s",
                "-",
                "",
            )
        )
    return rows


def render(rows: list[list[str]]) -> str:
    header = ["benchmark", "durable-tools", "bare Temporal", "ratio", "target", ""]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def _steps(name: str, params: dict[str, Any]) -> int:
    if name == "curves":
        return 2 * len(params["curves"]["levels"])
    return 1


def destinations(args: argparse.Namespace) -> tuple[Path, Path]:
    """Where the JSON and the PNG curves go: `--output`/`--plots` if given, the committed
    reference files with `--publish`, else bench/results/local/ (git-ignored)."""
    if args.publish:
        output = RESULTS / ("scale.json" if args.scale else "latest.json")
        plots = DOCS
    else:
        output, plots = LOCAL / "latest.json", LOCAL
    return Path(args.output or output), Path(args.plots or plots)


async def main(args: argparse.Namespace) -> int:
    core_logs_to_stderr()  # before the first client: the core's runtime is set once
    output, plot_dir = destinations(args)
    if args.scale:
        params, mode = (SCALE_REDUCED, "scale-reduced") if args.reduced else (SCALE, "scale")
    else:
        params, mode = (QUICK, "quick") if args.quick else (FULL, "full")
    if args.levels:
        params = {**params, "curves": {**params["curves"], "levels": args.levels}}
    if args.repeats:
        params = {
            **params,
            **{name: {**params[name], "repeats": args.repeats} for name in REPEATED},
        }
    chosen = args.only or [b for b in BENCHMARKS if not (args.quick and b in QUICK_SKIPS)]
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    began = time.perf_counter()
    console = Console(width=None if Console().is_terminal else 160)
    plots: list[Path] = []
    with (
        tempfile.TemporaryDirectory(prefix="durable-tools-bench-", dir=args.data_dir) as tmp,
        Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress,
    ):
        total = sum(_steps(name, params) for name in chosen)
        bar = progress.add_task("bench", total=total)

        def save() -> None:
            report = {
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "mode": mode,
                "partial": True,
                "parameters": {k: params[k] for k in chosen},
                "seconds": {k: round(v, 1) for k, v in timings.items()},
                "results": results,
            }
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(json.dumps(report, indent=2) + "\n")

        def tick() -> None:
            progress.advance(bar)

        async def measure(name: str, run: Callable[[], Awaitable[Any]]) -> None:
            if name not in chosen:
                return
            progress.update(bar, description=f"bench: {name}")
            started = time.perf_counter()
            results[name] = await run()
            timings[name] = time.perf_counter() - started
            save()  # a long suite that fails later keeps what it measured
            if name != "curves":
                tick()

        work = Path(tmp)
        async with server_client(args.address, work) as (client, address):
            bench = Bench(client, work)
            async with bench.workers():
                await measure("latency", lambda: measure_latency(bench, **params["latency"]))
                await measure(
                    "throughput", lambda: measure_throughput(bench, **params["throughput"])
                )
                await measure("history", lambda: measure_history(bench, **params["history"]))
                await measure(
                    "curves", lambda: measure_curves(bench, **params["curves"], tick=tick)
                )
                await measure("long_run", lambda: measure_long_run(bench, **params["long_run"]))
            await measure(
                "paused", lambda: measure_paused(client, address, work, **params["paused"])
            )
        await measure("recovery", lambda: measure_recovery(work, **params["recovery"]))
        progress.update(bar, description="bench: done")
    if "curves" in results and not args.no_plots:
        plots = plot_curves(results["curves"], plot_dir)
    rows = table(results)
    shown = Table(title=f"durable-tools vs a hand-written Temporal loop ({mode}, one run)")
    for column in ["benchmark", "durable-tools", "bare Temporal", "ratio", "target", ""]:
        shown.add_column(column, overflow="fold")
    for row in rows:
        shown.add_row(*row)
    console.print(shown)
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": mode,
        "server": args.address or "own dev server (transferProcessorMaxPollRPS=10000)",
        "data_dir": args.data_dir or tempfile.gettempdir(),
        "machine": machine(),
        "parameters": {k: params[k] for k in chosen},
        "seconds": {
            **{k: round(v, 1) for k, v in timings.items()},
            "total": round(time.perf_counter() - began, 1),
        },
        "results": results,
        "table": rows,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    written = ", ".join(_shown(p) for p in [output, *plots])
    console.print(f"\nwrote {written} ({report['seconds']['total']:.0f} s)")
    return 0


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it is under it (shorter to read)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="a ~1 minute version")
    sizes.add_argument(
        "--scale",
        action="store_true",
        help="the capacity suite: curves to 500 runs, 10,000 paused runs, a 1,000-turn run, "
        "recovery of 1,000 runs after a server restart (long)",
    )
    parser.add_argument(
        "--reduced", action="store_true", help="with --scale: smaller sizes (see SCALE_REDUCED)"
    )
    parser.add_argument("--address", help="use this Temporal server instead of starting one")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these")
    parser.add_argument(
        "--repeats",
        type=int,
        help="repeats of latency and throughput, whose figures are medians (more: steadier "
        "on a busy machine)",
    )
    parser.add_argument(
        "--levels",
        nargs="+",
        type=int,
        metavar="RUNS",
        help="the curve's levels of concurrent runs (e.g. 1 10 50 200 500; --scale has these)",
    )
    parser.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="parent of the temporary directory for the server's SQLite file and artifacts "
        "(default: /dev/shm where it exists, so the disk stays out of the figures; pass "
        "the system temp dir for a server on disk)",
    )
    parser.add_argument(
        "--output", help="where to write the JSON (default: bench/results/local/latest.json)"
    )
    parser.add_argument(
        "--plots", help="where to write the PNG curves (default: bench/results/local/)"
    )
    parser.add_argument("--no-plots", action="store_true", help="write no PNG")
    parser.add_argument(
        "--publish",
        action="store_true",
        help="replace the committed reference figures: bench/results/latest.json (scale.json "
        "with --scale) and docs/bench-*.png (`make bench-publish`); not with --quick",
    )
    args = parser.parse_args(argv)
    if args.publish and args.quick:
        parser.error("--publish replaces the reference figures: not with --quick")
    return args


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
