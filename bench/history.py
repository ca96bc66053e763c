"""History footprint: events and bytes a tool call adds to a run's history.

Marginal figures: (history of a long run - history of a short run) / extra calls, so the
fixed cost of a run (start, catalog, final answer) is not spread over the calls. Bytes are
the serialized protobuf size of the events.
"""

from __future__ import annotations

from typing import Any

from bench._common import BLOB, Bench, tool_steps
from bench._logs import expected_core_logs

__all__ = ["measure_history"]


async def _footprint(handle: Any) -> tuple[int, int]:
    history = await handle.fetch_history()
    return len(history.events), sum(e.ByteSize() for e in history.events)


async def measure_history(bench: Bench, *, short: int, long: int, big: int) -> dict[str, Any]:
    out: dict[str, Any] = {"short_calls": short, "long_calls": long, "big_output_bytes": big}
    for variant in ("durable", "bare"):
        sizes = {}
        for calls in (short, long):
            script = bench.script(tool_steps(calls))
            if variant == "bare":
                handle = await bench.run_bare(script, calls)
            else:
                handle = await bench.run_durable(script, calls)
            sizes[calls] = await _footprint(handle)
        extra = long - short
        out[variant] = {
            "events_per_call": (sizes[long][0] - sizes[short][0]) / extra,
            "bytes_per_call": (sizes[long][1] - sizes[short][1]) / extra,
            "run_events": {str(k): v[0] for k, v in sizes.items()},
            "run_bytes": {str(k): v[1] for k, v in sizes.items()},
        }
    # Large outputs: durable-tools keeps a bounded summary and an artifact reference; the
    # bare loop carries the whole output (in the tool's result, then in every later model
    # input), so it cannot take a second such call: the model input would pass 2 MB.
    big_calls = 3
    script = bench.script(tool_steps(big_calls, tool=BLOB, size=big))
    one = bench.script(tool_steps(1, tool=BLOB, size=big))
    events_3, bytes_3 = await _footprint(await bench.run_durable(script, big_calls))
    events_1, bytes_1 = await _footprint(await bench.run_durable(one, 1))
    out["durable_big"] = {
        "calls": big_calls,
        "bytes_per_call": (bytes_3 - bytes_1) / (big_calls - 1),
        "events_per_call": (events_3 - events_1) / (big_calls - 1),
        "run_bytes": {"1": bytes_1, str(big_calls): bytes_3},
    }
    small_one = bench.script(tool_steps(1))
    _, bytes_small = await _footprint(await bench.run_bare(small_one, 1))
    with expected_core_logs("TMPRL1103", why="for the bare loop's 1 MB payloads"):
        events_b, bytes_b = await _footprint(await bench.run_bare(one, 1))
    out["bare_big"] = {
        "calls": 1,
        # The small call's marginal cost, plus what the big output added to the run.
        "bytes_per_call": out["bare"]["bytes_per_call"] + (bytes_b - bytes_small),
        "run_bytes": {"1": bytes_b},
        "run_events": events_b,
    }
    return out
