"""Long-running commands: the embedded server, a worker, and the demo."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from durable_tools.connection import resolve_address
from durable_tools.server import DevServer, DevServerError
from durable_tools.worker import (
    ModelLimits,
    build_worker,
    missing_extras,
    secrets_from_env,
    task_queue_from_env,
)
from durable_tools.worker._project import WorkerSettings

from ._commands import load_tools
from ._deployment import deployment_from_args
from ._errors import CliError, connect_or_explain
from ._model_limits import model_limits_from_args
from ._oauth import oauth_broker
from ._output import echo
from ._project import project_from_args, project_registry
from ._signals import stop_on_signals
from ._telemetry import worker_telemetry

__all__ = ["cmd_demo", "cmd_server", "cmd_worker"]


async def cmd_server(args: argparse.Namespace) -> int:
    """Run the embedded dev server in the foreground until Ctrl-C."""
    try:
        server = DevServer(
            args.data_dir,
            port=args.port if args.port is not None else _port_from_env(),
            ui_port=args.ui_port,
            headless=args.headless,
            ui_codec_endpoint=args.ui_codec_endpoint,
        )
    except ValueError as error:
        raise CliError(f"--ui-codec-endpoint: {error}", 2) from None
    stop = stop_on_signals()
    try:
        await server.start()
    except DevServerError as error:
        raise CliError(str(error)) from None
    echo(f"Temporal dev server at {server.address} (namespace {server.namespace})", flush=True)
    if server.ui_base:
        echo(f"Web UI: {server.ui_base}", flush=True)
    echo(f"state: {server.db_path}   log: {server.log_path}", flush=True)
    echo("Ctrl-C to stop", flush=True)
    try:
        while server.running and not stop.is_set():
            # `asyncio.timeout`, not `wait_for`: on Python 3.11 `wait_for` swallows a cancellation
            # that arrives with its result, and this loop would go on after its task was cancelled.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await stop.wait()
    finally:
        crashed = not server.running
        code = await server.stop()
    if crashed and not stop.is_set():
        raise CliError(f"the dev server exited with code {code}; see {server.log_path}", 1)
    echo("stopped", flush=True)
    return 0


def _describe_limits(limits: dict[str, ModelLimits]) -> str:
    """`openai:gpt-4.1 500/min 30000 tokens/min, ...`, or "none"."""
    described = []
    for spec, limit in limits.items():
        parts = [spec]
        if limit.requests_per_minute is not None:
            parts.append(f"{limit.requests_per_minute:g}/min")
        if limit.tokens_per_minute is not None:
            parts.append(f"{limit.tokens_per_minute} tokens/min")
        described.append(" ".join(parts))
    return ", ".join(described) or "none"


def _port_from_env() -> int:
    """The port of `TEMPORAL_ADDRESS` (default 7233), the one every other command talks to.

    Raises:
        CliError: It names a host the embedded server cannot listen on.
    """
    address = resolve_address()
    host, _, port = address.rpartition(":")
    if host.strip("[]") not in ("127.0.0.1", "localhost") or not port.isdigit():
        raise CliError(
            f"TEMPORAL_ADDRESS is {address!r}, and the embedded server listens on 127.0.0.1 "
            "only: pass --port, or unset TEMPORAL_ADDRESS"
        )
    return int(port)


async def cmd_worker(args: argparse.Namespace) -> int:
    """Run a worker for a registry (`--tools`, a project file's `tools` and sources, or
    both) until Ctrl-C or SIGTERM, then shut down gracefully. Flags win over the file."""
    project = project_from_args(args)
    if project is None and not args.tools:
        raise CliError("no tools: give --tools MODULE[:ATTR] or --project FILE", 2)
    registry = getattr(args, "registry", None) or (load_tools(args.tools) if args.tools else None)
    settings = project.worker if project is not None else WorkerSettings()
    version = deployment_from_args(args)
    # After the tools module's providers; the flags' limits over the file's.
    model_limits = {**settings.model_limits, **model_limits_from_args(args)}
    secrets = secrets_from_env()
    if project is not None:
        registry = await project_registry(project, registry, secrets)
    assert registry is not None
    client = await connect_or_explain(flags=args, **worker_telemetry(args))
    task_queue = args.task_queue or (project and project.task_queue) or task_queue_from_env()
    shutdown = args.graceful_shutdown
    if shutdown is None:
        shutdown = (
            30.0
            if settings.graceful_shutdown_seconds is None
            else settings.graceful_shutdown_seconds
        )
    options: dict[str, Any] = {"graceful_shutdown_timeout": timedelta(seconds=max(shutdown, 0))}
    if args.max_concurrent_activities or settings.max_concurrent_activities:
        options["max_concurrent_activities"] = (
            args.max_concurrent_activities or settings.max_concurrent_activities
        )
    require_identity = bool(getattr(args, "require_identity", False) or settings.require_identity)
    broker = oauth_broker(args.oauth_providers)
    worker = build_worker(
        client,
        registry,
        task_queue=task_queue,
        secrets=secrets,
        oauth=broker,
        deployment_version=version,
        model_limits=model_limits,
        require_identity=require_identity,
        **options,
    )
    stop = stop_on_signals()
    specs = registry.specs()
    names = ", ".join(s.name + (" (local)" if s.policy.local else "") for s in specs) or "none"
    versioned = ""
    if version is not None:
        versioned = f"deployment {version.deployment_name} build {version.build_id}\n"
    echo(
        f"worker on {client.service_client.config.target_host} namespace {client.namespace} "
        f"task queue {task_queue}\n{versioned}"
        f"tools: {names}\nsecrets: {len(secrets)} from DURABLE_TOOLS_SECRET_*\n"
        f"OAuth: {'providers from ' + args.oauth_providers if broker else 'not configured'}\n"
        f"model limits: {_describe_limits(model_limits)}\n"
        + ("identity: runs need a user and a tenant\n" if require_identity else "")
        + (
            f"project: {args.project_file_path}: {len(project.mcp)} MCP, "
            f"{len(project.openapi)} OpenAPI, {len(project.http)} HTTP sources\n"
            if project is not None
            else ""
        )
        + "Ctrl-C or SIGTERM to stop",
        flush=True,
    )
    for missing in missing_extras(registry):
        echo(f"warning: {missing}", err=True, flush=True)
    async with contextlib.AsyncExitStack() as refreshing:
        # Documents with `refresh_seconds` are read again while the worker runs.
        for refresher in project.refreshers if project is not None else ():
            await refreshing.enter_async_context(refresher)
        run = asyncio.ensure_future(worker.run())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({run, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not run.done():
            echo("shutting down: finishing running tools ...", flush=True)
            await worker.shutdown()
        stopping.cancel()
    try:
        await run
    except Exception as error:  # the worker died on its own: say why, briefly
        raise CliError(f"worker stopped: {error}", 1) from None
    echo("worker stopped", flush=True)
    return 0


async def cmd_demo(args: argparse.Namespace) -> int:
    """The demo: server, worker, a scripted run with an approval, the timeline."""
    from durable_tools.demo import run_demo

    def out(line: str) -> None:
        echo(line, flush=True)

    try:
        return await run_demo(auto_approve=args.auto_approve, keep_server=args.keep_server, out=out)
    except DevServerError as error:
        raise CliError(str(error)) from None
