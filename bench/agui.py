"""`python -m bench.agui [--messages 10] [--address HOST:PORT]`.

Time from a user's message to its first streamed token, through the AG-UI endpoint
(`durable_tools.agui`, served by uvicorn on 127.0.0.1, read with an HTTP client as a
browser would) against `DurableTools.start_send` + `AgentRun.stream()` directly, in one
run on one server: each message opens a new session (the first message of a thread, the
endpoint's common case), the two paths interleaved so a shared machine's load moves both.
The model is scripted (its answer is published whole as the first token); both paths have
`stream_tokens=True`. Prints and returns the medians and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench._common import Bench, server_client
from durable_tools import AgentConfig, DurableTools, SessionConfig
from durable_tools.agui import AguiConfig, create_agui_app
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, add_token

__all__ = ["measure_agui"]


async def _endpoint_first_token(http: httpx.AsyncClient, url: str, token: str) -> float:
    """Seconds from POSTing a new thread's first message to its first text delta."""
    body = {
        "threadId": f"bench-{uuid.uuid4().hex[:10]}",
        "runId": "run-1",
        "messages": [{"id": "m-1", "role": "user", "content": "hello"}],
    }
    headers = {"authorization": f"Bearer {token}"}
    started = time.perf_counter()
    async with http.stream("POST", url, json=body, headers=headers) as response:
        first = None
        async for line in response.aiter_lines():
            if first is None and line.startswith("data: ") and '"TEXT_MESSAGE_CONTENT"' in line:
                first = time.perf_counter() - started
    if first is None:
        raise RuntimeError("the endpoint streamed no text")
    return first


async def _direct_first_token(tools: DurableTools, config: AgentConfig) -> float:
    """Seconds from `start_send` of a new session's first message to its first text event."""
    session = f"bench-direct-{uuid.uuid4().hex[:10]}"
    started = time.perf_counter()
    await tools.start_send(session, "hello", config=config)
    stream = tools.run(session).stream()
    try:
        async for event in stream:
            if event.kind == "text":
                return time.perf_counter() - started
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    raise RuntimeError("the stream carried no text")


async def measure_agui(bench: Bench, *, messages: int) -> dict[str, Any]:
    """First-token times through the endpoint and directly, `messages` of each."""
    script = bench.script([{"text": "hello, this is the answer"}] * (2 * messages + 2))
    config = AgentConfig(model=f"scripted:{script}", stream_tokens=True, session=SessionConfig())
    tools = DurableTools(bench.client, bench.durable_queue)
    tokens = bench.work_dir / "tokens.json"
    token = add_token(tokens, "bench")
    app = create_agui_app(
        tools, AguiConfig(agent=config, auth=AuthConfig(TokenStore(tokens)), poll_interval=0.1)
    )
    server = InboxServer(app, port=0)
    await server.start()
    endpoint: list[float] = []
    direct: list[float] = []
    try:
        async with httpx.AsyncClient(timeout=120) as http:
            await _endpoint_first_token(http, f"{server.url}/", token)  # warm both paths
            await _direct_first_token(tools, config)
            for _ in range(messages):
                endpoint.append(await _endpoint_first_token(http, f"{server.url}/", token))
                direct.append(await _direct_first_token(tools, config))
    finally:
        await server.stop()
    through, straight = statistics.median(endpoint), statistics.median(direct)
    return {
        "messages": messages,
        "first_token_ms": {"agui_endpoint": through * 1000, "agent_run_stream": straight * 1000},
        "ratio_endpoint_to_stream": through / straight,
    }


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as work:
        async with server_client(args.address, Path(work)) as (client, _):
            bench = Bench(client, Path(work))
            async with bench.workers():
                return await measure_agui(bench, messages=args.messages)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--address", help="an existing server (default: start one)")
    print(json.dumps(asyncio.run(_main(parser.parse_args())), indent=2))
