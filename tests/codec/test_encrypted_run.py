"""A run with encryption on: its raw history holds no plaintext; the codec server decodes it
over HTTP for a token holder and refuses everyone else."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import pytest
from codec_support import (
    ANSWER,
    ARGUMENT,
    KEY,
    PROMPT,
    RESULT,
    SENTINELS,
    codec,
    encrypting_client,
    vault_model,
    vault_registry,
)
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus, connect
from durable_tools.codec import CodecKeyError, EncryptionCodec
from durable_tools.codec.server import CodecServerConfig, create_codec_app
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, add_token
from support import assert_not_wedged, running_worker

UI = "http://127.0.0.1:8233"


def scheduled_input(events: list[HistoryEvent]) -> Payload:
    for event in events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == "lookup":
                return attributes.input.payloads[0]
    raise AssertionError("no lookup activity in the history")


def as_json(payload: Payload) -> dict[str, object]:
    return {
        "metadata": {k: base64.b64encode(v).decode() for k, v in payload.metadata.items()},
        "data": base64.b64encode(payload.data).decode(),
    }


async def test_an_encrypted_run_leaves_no_plaintext_and_the_codec_server_decodes_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    secure = await encrypting_client(client)
    tools = DurableTools(secure, task_queue)
    async with running_worker(secure, vault_registry(), task_queue):
        run = await tools.start(PROMPT, model=vault_model(tmp_path))
        result = await run.result()
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED and result.final_answer == ANSWER
    # The encrypting client reads the run as usual.
    assert timeline[0].tool == "lookup" and ARGUMENT in timeline[0].arguments
    assert timeline[0].result is not None and RESULT in timeline[0].result

    # Read raw, without the codec: every payload is ciphertext, summaries included.
    handle = client.get_workflow_handle(run.run_id)
    await assert_not_wedged(handle)
    raw = await handle.fetch_history()
    blob = b"".join(event.SerializeToString() for event in raw.events)
    for sentinel in SENTINELS:
        assert sentinel not in blob, f"{sentinel!r} in the raw history"
    payload = scheduled_input(list(raw.events))
    assert payload.metadata["encoding"] == b"binary/encrypted"

    # The codec server decodes that payload for a token holder, and for nobody else.
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "alice")
    config = CodecServerConfig(auth=AuthConfig(TokenStore(tokens)), ui_origins=(UI,))
    server = InboxServer(create_codec_app(codec(), config), port=0)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url) as http:
            body = {"payloads": [as_json(payload)]}
            headers = {"X-Namespace": client.namespace, "Origin": UI}
            refused = await http.post("/decode", json=body, headers=headers)
            wrong = await http.post(
                "/decode", json=body, headers={**headers, "Authorization": "Bearer nope"}
            )
            decoded = await http.post(
                "/decode", json=body, headers={**headers, "Authorization": f"Bearer {token}"}
            )
            prefixed = await http.post(
                f"/{client.namespace}/decode",
                json=body,
                headers={"Authorization": f"Bearer {token}"},
            )
    finally:
        await server.stop()
    assert refused.status_code == 401 and wrong.status_code == 401
    assert ARGUMENT not in refused.text and ARGUMENT not in wrong.text
    # Refusals carry CORS headers too, so the UI can tell "not allowed" from "unreachable".
    assert refused.headers["access-control-allow-origin"] == UI
    assert decoded.status_code == 200, decoded.text
    assert decoded.headers["access-control-allow-origin"] == UI
    assert decoded.headers["access-control-allow-credentials"] == "true"
    [plain] = decoded.json()["payloads"]
    assert base64.b64decode(plain["metadata"]["encoding"]) == b"json/plain"
    invocation = json.loads(base64.b64decode(plain["data"]))
    assert invocation["arguments"] == {"name": ARGUMENT}
    assert prefixed.status_code == 200 and prefixed.json() == decoded.json()


async def test_encrypting_clients_keep_arguments_out_of_activity_summaries(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    secure = await encrypting_client(client)
    tools = DurableTools(secure, task_queue)
    async with running_worker(secure, vault_registry(), task_queue):
        quiet = await tools.start(PROMPT, model=vault_model(tmp_path))
        chosen = await tools.start(
            PROMPT, config=AgentConfig(model=vault_model(tmp_path), summary_arguments=True)
        )
        await quiet.result()
        await chosen.result()

    async def summary_of(run_id: str) -> str:
        history = await secure.get_workflow_handle(run_id).fetch_history()
        payload = scheduled_input(list(history.events))
        for event in history.events:
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.input.payloads and attributes.input.payloads[0] == payload:
                [text] = await secure.data_converter.decode([event.user_metadata.summary])
                assert isinstance(text, str)
                return text
        raise AssertionError("no lookup activity")

    assert await summary_of(quiet.run_id) == "lookup c1"
    assert ARGUMENT in await summary_of(chosen.run_id)


async def test_the_codec_server_answers_the_uis_preflight_and_refuses_bad_bodies(
    tmp_path: Path,
) -> None:
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "bob", ["support"])
    config = CodecServerConfig(
        auth=AuthConfig(TokenStore(tokens)), ui_origins=(UI,), groups=("ops",)
    )
    server = InboxServer(create_codec_app(codec(), config), port=0)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url) as http:
            preflight = await http.options(
                "/decode",
                headers={
                    "Origin": UI,
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization,content-type,x-namespace",
                },
            )
            other_origin = await http.options(
                "/decode",
                headers={"Origin": "http://evil.test", "Access-Control-Request-Method": "POST"},
            )
            not_in_group = await http.post(
                "/decode", json={"payloads": []}, headers={"Authorization": f"Bearer {token}"}
            )
    finally:
        await server.stop()
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == UI
    assert preflight.headers["access-control-allow-credentials"] == "true"
    allowed = preflight.headers["access-control-allow-headers"].lower()
    assert {"authorization", "content-type", "x-namespace"} <= {
        h.strip() for h in allowed.split(",")
    }
    assert other_origin.status_code == 400
    assert "access-control-allow-origin" not in other_origin.headers
    assert not_in_group.status_code == 403


async def test_the_codec_server_encodes_and_names_what_was_wrong(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    auth = {"Authorization": f"Bearer {add_token(tokens, 'alice')}"}
    server = InboxServer(
        create_codec_app(codec(), CodecServerConfig(auth=AuthConfig(TokenStore(tokens)))), port=0
    )
    await server.start()
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"')
    try:
        async with httpx.AsyncClient(base_url=server.url, headers=auth) as http:
            encoded = await http.post("/encode", json={"payloads": [as_json(plain)]})
            [sealed] = encoded.json()["payloads"]
            assert base64.b64decode(sealed["metadata"]["encoding"]) == b"binary/encrypted"
            back = await http.post("/decode", json={"payloads": [sealed]})
            sealed["data"] = base64.b64encode(b"x" * 40).decode()
            tampered = await http.post("/decode", json={"payloads": [sealed]})
            garbage = await http.post("/decode", content=b"not json")
    finally:
        await server.stop()
    assert back.json() == {"payloads": [as_json(plain)]}
    assert tampered.status_code == 422 and "failed authentication" in tampered.json()["error"]
    assert garbage.status_code == 400 and "proto3 JSON" in garbage.json()["error"]


async def test_connect_encrypts_with_the_keys_in_the_environment(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command and worker connects through `connect()`: with keys in the environment
    they all encrypt, and read encrypted runs, with no code change."""
    monkeypatch.setenv("DURABLE_TOOLS_CODEC_KEYS", "k1:" + base64.b64encode(KEY).decode())
    address = client.service_client.config.target_host
    secure = await connect(address, client.namespace)
    assert isinstance(secure.data_converter.payload_codec, EncryptionCodec)
    async with running_worker(secure, vault_registry(), task_queue):
        run = await DurableTools(secure, task_queue).start(PROMPT, model=vault_model(tmp_path))
        result = await run.result()
        # A second client from the same environment (what `durable-tools show` builds)
        # reads it.
        reader = DurableTools(await connect(address, client.namespace), task_queue)
        timeline = await reader.run(run.run_id).timeline()
    assert result.status == RunStatus.COMPLETED
    assert ARGUMENT in timeline[0].arguments
    raw = await client.get_workflow_handle(run.run_id).fetch_history()
    blob = b"".join(event.SerializeToString() for event in raw.events)
    assert all(sentinel not in blob for sentinel in SENTINELS)
    # Keys set but unusable: connecting fails instead of silently not encrypting.
    monkeypatch.setenv("DURABLE_TOOLS_CODEC_KEYS", "k1:not-base64!")
    with pytest.raises(CodecKeyError):
        await connect(address, client.namespace)
