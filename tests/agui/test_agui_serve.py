"""`durable-tools serve --agui MODEL`: the AG-UI endpoint at /agui beside the inbox, the
same tokens file for both, run as the command is run (a process of its own)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path

import httpx
from agui_support import chat_registry, run_input, sse_events, types, user
from temporalio.testing import WorkflowEnvironment

from durable_tools.inbox import add_token
from support import answer, free_port, running_worker, write_script


async def test_serve_mounts_the_endpoint_beside_the_inbox(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    alice = add_token(tokens, "alice")
    model = write_script(tmp_path, [answer("hello from the endpoint")])
    port = free_port()
    environment = {
        **os.environ,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": env.client.namespace,
        "DURABLE_TOOLS_TASK_QUEUE": task_queue,
        "DURABLE_TOOLS_HOME": str(tmp_path / "home"),
    }
    ran: list[str] = []
    async with running_worker(env.client, chat_registry(ran), task_queue):
        serve = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "durable_tools.cli",
            "serve",
            "--port",
            str(port),
            "--tokens-file",
            str(tokens),
            "--agui",
            model,
            env=environment,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert serve.stdout is not None
            lines = [(await asyncio.wait_for(serve.stdout.readline(), 60)).decode()]
            lines.append((await asyncio.wait_for(serve.stdout.readline(), 60)).decode())
            assert any(f"AG-UI endpoint at http://127.0.0.1:{port}/agui/" in li for li in lines)
            body = run_input(f"t-{uuid.uuid4().hex[:8]}", [user("hi")])
            headers = {"authorization": f"Bearer {alice}"}
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                reply = await http.post("/agui/", json=body, headers=headers)
                assert reply.status_code == 200, reply.text
                events = sse_events(reply.text)
                assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED"
                assert events[-1]["result"]["answer"] == "hello from the endpoint"
                assert (await http.post("/agui/", json=body)).status_code == 401
                pending = await http.get("/api/pending", headers=headers)
                assert pending.status_code == 200 and pending.json()["user"] == "alice"
        finally:
            serve.send_signal(signal.SIGINT)
            _, err = await asyncio.wait_for(serve.communicate(), 60)
    assert serve.returncode == 0, err.decode()
