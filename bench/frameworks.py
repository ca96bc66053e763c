"""A tool call through durable-tools' runtime inside each agent framework, against the
framework's own activity tool, side by side in one run: `python -m bench.frameworks`.

Pydantic AI (an agent with Temporal durability): `lookup` through `DurableToolset`
against `lookup` as Pydantic AI's own function tool (its Temporal tool activity). The
OpenAI Agents SDK under Temporal's plugin: `lookup` through `durable_function_tools`
against the plugin's `activity_as_tool`. In each pair the same scripted model (run by
the framework's own model activity) calls the tool once a turn, `--calls` times, and the
figure is the run's wall time divided by its calls (a call and its model turn), the
median of `--repeats` runs of each, taken in turns. The overhead is the difference per
call; the ratio is ours over the framework's own.

Results go to bench/results/local/frameworks.json (untracked); the table is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.converter import DataConverter

from bench._common import machine, make_registry, server_client
from bench._logs import core_logs_to_stderr, expected_core_logs
from durable_tools import build_worker

__all__ = ["OUTPUT", "measure", "table"]

OUTPUT = Path(__file__).resolve().parent / "results" / "local" / "frameworks.json"
"""Where the figures go (`bench/results/local/` is not tracked)."""


async def _median_ms_per_call(
    client: Client, task_queue: str, workflows: dict[str, Any], calls: int, repeats: int
) -> dict[str, float]:
    """Each variant's median wall time per call over `repeats` runs, the variants in turns
    (after one warm-up run each)."""
    walls: dict[str, list[float]] = {name: [] for name in workflows}
    for round_ in range(repeats + 1):
        for name, workflow in workflows.items():
            started = time.perf_counter()
            answer = await client.execute_workflow(
                workflow.run,
                calls,
                id=f"bench-{name}-{uuid.uuid4().hex[:10]}",
                task_queue=task_queue,
            )
            wall = time.perf_counter() - started
            if answer != f"done after {calls} calls":
                raise RuntimeError(f"{name} ended badly: {answer!r}")
            if round_:  # the first round warms the worker and the sandbox up
                walls[name].append(wall)
    return {name: statistics.median(w) * 1000 / calls for name, w in walls.items()}


def _with_plugins(client: Client, plugins: list[Any], converter: DataConverter) -> Client:
    return Client(
        client.service_client, namespace=client.namespace, data_converter=converter, plugins=plugins
    )


async def _pydantic_ai(client: Client, calls: int, repeats: int) -> dict[str, float]:
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    from bench import _pydantic_ai_host as host

    framework = _with_plugins(client, [PydanticAIPlugin()], client.config()["data_converter"])
    queue = f"bench-pydantic-ai-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        framework,
        make_registry(),
        task_queue=queue,
        workflows=[host.OursWorkflow, host.OwnToolWorkflow],
        plugins=[AgentPlugin(host.ours_agent), AgentPlugin(host.own_tool_agent)],
    )
    async with worker:
        workflows = {"ours": host.OursWorkflow, "own": host.OwnToolWorkflow}
        return await _median_ms_per_call(framework, queue, workflows, calls, repeats)


async def _openai_agents(client: Client, calls: int, repeats: int) -> dict[str, float]:
    from temporalio.openai_agents import OpenAIAgentsPlugin
    from temporalio.openai_agents.testing import TestModelProvider

    from bench import _openai_agents_host as host

    plugin = OpenAIAgentsPlugin(model_provider=TestModelProvider(host.LookupModel()))
    # The plugin sets its own payload converter: its client starts from the default one.
    framework = _with_plugins(client, [plugin], DataConverter())
    queue = f"bench-openai-agents-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        framework,
        make_registry(),
        task_queue=queue,
        workflows=[host.OursWorkflow, host.OwnToolWorkflow],
        activities=[host.lookup],
    )
    async with worker:
        workflows = {"ours": host.OursWorkflow, "own": host.OwnToolWorkflow}
        return await _median_ms_per_call(framework, queue, workflows, calls, repeats)


_FRAMEWORKS: dict[str, Callable[[Client, int, int], Any]] = {
    "pydantic_ai": _pydantic_ai,
    "openai_agents": _openai_agents,
}


async def measure(client: Client, calls: int, repeats: int) -> dict[str, Any]:
    """Both frameworks' figures, with the machine and the workload."""
    figures: dict[str, Any] = {}
    for name, run in _FRAMEWORKS.items():
        ms = await run(client, calls, repeats)
        figures[name] = {
            "ours_ms_per_call": ms["ours"],
            "own_tool_ms_per_call": ms["own"],
            "overhead_ms_per_call": ms["ours"] - ms["own"],
            "ratio": ms["ours"] / ms["own"],
        }
    return {"calls": calls, "repeats": repeats, "machine": machine(), "frameworks": figures}


def table(results: dict[str, Any]) -> str:
    """The figures as a Markdown table."""
    rows = [
        "| framework | own activity tool, ms/call | through durable-tools, ms/call "
        "| overhead ms/call | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, f in results["frameworks"].items():
        rows.append(
            f"| {name} | {f['own_tool_ms_per_call']:.1f} | {f['ours_ms_per_call']:.1f} | "
            f"{f['overhead_ms_per_call']:+.1f} | {f['ratio']:.2f}x |"
        )
    return "\n".join(rows)


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    core_logs_to_stderr()  # before the first client: the core's runtime is set once
    with (
        tempfile.TemporaryDirectory() as work,
        expected_core_logs("tcp connect error", why="from polls retried as the server stopped"),
    ):
        async with server_client(args.address, Path(work)) as (client, _):
            return await measure(client, args.calls, args.repeats)


def main() -> None:
    # Nothing to export the Agents SDK's traces to (its workflow sandbox reads the setting
    # from the environment, not from the process's `set_tracing_disabled`).
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--address", help="a Temporal server to use (default: start one)")
    parser.add_argument("--calls", type=int, default=10, help="tool calls per run")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each variant")
    args = parser.parse_args()
    if args.calls < 1 or args.repeats < 1:
        parser.error("--calls and --repeats must be at least 1")
    results = asyncio.run(_main(args))
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{results['calls']} calls a run, median of {results['repeats']} runs each")
    print(table(results))
    print(
        f"wrote {OUTPUT.relative_to(Path.cwd()) if OUTPUT.is_relative_to(Path.cwd()) else OUTPUT}"
    )


if __name__ == "__main__":
    main()
