"""Hostile requests to the AG-UI endpoint: each is refused with a clear 4xx (or, once the
AG-UI run started, a RUN_ERROR) and nothing reaches a run."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from agui_support import chat, run_input, user
from starlette.requests import Request
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools
from durable_tools._callers._tokens import hash_token
from durable_tools.agui import AguiConfig, InputLimits, create_agui_app, session_id
from durable_tools.inbox import AuthConfig, TokenStore, add_token
from support import answer, calls


async def test_hostile_bodies_are_refused_before_any_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    limits = InputLimits(max_messages=50)
    async with chat(
        client, task_queue, tmp_path, [answer("hi")], max_body_bytes=64_000, limits=limits
    ) as endpoint:
        token = endpoint.alice

        async def status(body: object, **headers: str) -> tuple[int, str]:
            response = await endpoint.post(token, body, **headers)
            return response.status_code, response.json()["error"] if response.content else ""

        assert (await status(b"not json"))[0] == 400
        assert (await status(b"\xff\xfe"))[0] == 400
        assert (await status([1, 2]))[0] == 400
        assert (await status(b"[" * 100_00 + b"]" * 100_00))[0] in (400, 413)
        code, message = await status({"threadId": thread})
        assert (code == 422 and "runId" in message) or "messages" in message
        for bad_thread in ("x" * 129, "t\u0456read", "../etc", "", "a b", "t\u200bx"):
            code, message = await status(run_input(bad_thread, [user("hi")]))
            assert code in (400, 422), (bad_thread, code)
        code, message = await status(run_input(thread, [user("hi", message_id="m" * 500)]))
        assert code == 400 and "message id" in message
        assert (await status(run_input(thread, [user("hi")] * 51)))[0] == 413
        huge = await endpoint.post(token, run_input(thread, [user("x" * 70_000)]))
        assert huge.status_code == 413
        plain = await status(run_input(thread, [user("hi")]), **{"content-type": "text/plain"})
        assert plain[0] == 415
        assert (await status(run_input(thread, [])))[0] == 400
        assert (await status(run_input(thread, [user("   ")])))[0] == 400
        code, message = await status(run_input(thread, [user("hi \ud800")]))
        assert code == 400 and "lone surrogate" in message
        assert (await status(run_input("t.c1", [user("hi")])))[0] == 400
        tools = run_input(thread, [user("hi")])
        tools["tools"] = [{"name": "spy", "description": "d", "parameters": {}}]
        assert (await status(tools))[0] == 400
        nothing = await DurableTools(client, task_queue).pending()
        assert not [r for r in nothing if r.run_id == session_id("agui", "alice", thread)]


async def test_a_resume_that_names_no_interrupt_is_a_run_error(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    script = [calls(("c1", "pay", {"amount_cents": 5})), answer("done")]
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        asked = user("pay")
        interrupt = await endpoint.interrupted(thread, asked)
        digest = interrupt["metadata"]["argumentsHash"]
        other = "0" * 64

        async def error_of(entry: dict[str, object]) -> str:
            got = await endpoint.run(endpoint.alice, run_input(thread, [asked], [entry]))
            assert [got[0]["type"], got[-1]["type"]] == ["RUN_STARTED", "RUN_ERROR"]
            return str(got[-1]["message"])

        resolved = {"status": "resolved", "payload": {"approved": True}}
        assert "unknown interrupt" in await error_of({"interruptId": "x", **resolved})
        stale = await error_of({"interruptId": f"approval:c1:{other}", **resolved})
        assert "another arguments hash" in stale
        foreign = await error_of({"interruptId": f"approval:c9:{digest}", **resolved})
        assert "no approval is pending for call c9" in foreign
        mismatch = {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"approved": True, "argumentsHash": other},
        }
        assert "arguments hash mismatch" in await error_of(mismatch)
        vague = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"ok": 1}}
        assert '"approved": true' in await error_of(vague)
        assert endpoint.ran == []

        # Denied by cancelling the interrupt: the tool never runs; a later approval of
        # the same interrupt is refused as decided.
        cancel = {"interruptId": interrupt["id"], "status": "cancelled"}
        denied = await endpoint.run(endpoint.alice, run_input(thread, [asked], [cancel]))
        assert denied[-1]["type"] == "RUN_FINISHED"
        late = await error_of({"interruptId": interrupt["id"], **resolved})
        assert "already denied" in late
        assert endpoint.ran == []


async def test_a_hook_user_with_look_alike_characters_is_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    names = {"cyrillic": "\u0430lice", "zero-width": "ali\u200bce", "blank": " "}

    async def hook(request: Request) -> str | None:  # the host app's own sign-in, say
        return names.get(request.headers.get("x-user", ""))

    config = AguiConfig(agent=AgentConfig(model="scripted:none.json"), authenticate=hook)
    app = create_agui_app(DurableTools(client, task_queue), config)
    transport = httpx.ASGITransport(app=app)
    body = json.dumps(run_input("t-1", [user("hi")])).encode()
    async with httpx.AsyncClient(transport=transport, base_url="http://agui.test") as http:
        headers = {"content-type": "application/json"}
        nobody = await http.post("/", content=body, headers=headers)
        assert nobody.status_code == 401
        for trick in names:
            refused = await http.post("/", content=body, headers={**headers, "x-user": trick})
            assert refused.status_code == 403, trick
            assert "not a valid user name" in refused.json()["error"]


async def test_a_login_session_of_the_host_app_does_not_speak_for_the_user(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    alice = add_token(tokens, "alice")
    config = AguiConfig(
        agent=AgentConfig(model="scripted:none.json"), auth=AuthConfig(TokenStore(tokens))
    )
    endpoint = create_agui_app(DurableTools(client, task_queue), config)
    signed_in = {"token_sha256": hash_token(alice), "sid": "s-1", "iat": int(time.time())}

    async def host_app(scope: Any, receive: Any, send: Any) -> None:
        # The inbox's login, as a host app's session middleware would hand it on.
        await endpoint({**scope, "session": signed_in}, receive, send)

    transport = httpx.ASGITransport(app=host_app)
    body = json.dumps(run_input("t-1", [user("hi")])).encode()
    async with httpx.AsyncClient(transport=transport, base_url="http://agui.test") as http:
        refused = await http.post("/", content=body, headers={"content-type": "application/json"})
    assert refused.status_code == 401
