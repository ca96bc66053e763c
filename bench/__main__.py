"""`python -m bench [--quick] [--address HOST:PORT] [--only NAME ...]`.

Prints a table and writes bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._common import Bench, machine, server_client
from bench.history import measure_history
from bench.latency import measure_latency
from bench.paused import measure_paused
from bench.throughput import measure_throughput

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
BENCHMARKS = ("latency", "throughput", "history", "paused")

FULL = {
    "latency": {"calls": 20, "repeats": 7},
    "throughput": {"runs": 50, "calls": 5, "repeats": 2},
    "history": {"short": 2, "long": 10, "big": 1_000_000},
    "paused": {"runs": 1000, "max_cached": 100},
}
QUICK = {
    "latency": {"calls": 10, "repeats": 3},
    "throughput": {"runs": 50, "calls": 5, "repeats": 1},
    "history": {"short": 2, "long": 6, "big": 1_000_000},
    "paused": {"runs": 200, "max_cached": 20},
}


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
                "<= 1.15x",
                "ok" if ratio <= 1.15 else "MISSED",
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
                    "<= 1.15x",
                    "ok" if quiet <= 1.15 else "MISSED",
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
                "-",
                "",
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
                "-",
                "",
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
    return rows


def render(rows: list[list[str]]) -> str:
    header = ["benchmark", "durable-tools", "bare Temporal", "ratio", "target", ""]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


async def main(args: argparse.Namespace) -> int:
    params = QUICK if args.quick else FULL
    chosen = args.only or list(BENCHMARKS)
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="durable-tools-bench-", dir=args.data_dir) as tmp:
        work = Path(tmp)
        async with server_client(args.address, work) as (client, address):
            bench = Bench(client, work)
            async with bench.workers():
                for name, run in (
                    ("latency", lambda: measure_latency(bench, **params["latency"])),
                    ("throughput", lambda: measure_throughput(bench, **params["throughput"])),
                    ("history", lambda: measure_history(bench, **params["history"])),
                ):
                    if name in chosen:
                        started = time.perf_counter()
                        print(f"[bench] {name} ...", flush=True)
                        results[name] = await run()
                        timings[name] = time.perf_counter() - started
            if "paused" in chosen:
                started = time.perf_counter()
                print("[bench] paused ...", flush=True)
                results["paused"] = await measure_paused(client, address, work, **params["paused"])
                timings["paused"] = time.perf_counter() - started
    rows = table(results)
    print()
    print(render(rows))
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
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
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out} ({report['seconds']['total']:.0f} s)")
    return 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a ~1 minute version")
    parser.add_argument("--address", help="use this Temporal server instead of starting one")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these")
    parser.add_argument(
        "--data-dir",
        help="parent of the temporary directory for the server's SQLite file and artifacts "
        "(default: the system temp dir; /dev/shm takes the disk out of the figures)",
    )
    parser.add_argument("--output", default=str(RESULTS), help="where to write the JSON")
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
