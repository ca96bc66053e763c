"""The codec server's boundaries, against the real uvicorn server: the trusted proxy is the
socket peer, bodies over the limit are refused unread, compressed payloads cannot inflate
past a bound, and a malformed payload is a 400 naming what is wrong."""

from __future__ import annotations

import asyncio
import base64
import gzip
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from temporalio.api.common.v1 import Payload

from durable_tools.codec import EncryptionCodec, KeyRing
from durable_tools.codec.server import CodecServerConfig, create_codec_app
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, add_token

KEY = bytes(range(32))
UI = "http://127.0.0.1:8233"
MiB = 1024 * 1024


def as_json(payload: Payload) -> dict[str, object]:
    return {
        "metadata": {k: base64.b64encode(v).decode() for k, v in payload.metadata.items()},
        "data": base64.b64encode(payload.data).decode(),
    }


def zeros(size: int) -> Payload:
    return Payload(metadata={"encoding": b"binary/plain"}, data=bytes(size))


@asynccontextmanager
async def codec_server(tmp_path: Path, **config: Any) -> AsyncIterator[tuple[str, str]]:
    """A codec server for alice (compressing); yields its URL and alice's token."""
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "alice")
    trusted = config.pop("trusted", ())
    auth = AuthConfig(TokenStore(tokens), trusted_proxies=tuple(trusted))
    app = create_codec_app(
        EncryptionCodec(KeyRing({"k1": KEY}), compress=True),
        CodecServerConfig(auth=auth, ui_origins=(UI,), **config),
    )
    server = InboxServer(app, port=0)
    await server.start()
    try:
        yield server.url, token
    finally:
        await server.stop()


async def test_forged_forwarding_headers_do_not_decode_for_a_local_process(
    tmp_path: Path,
) -> None:
    body = {"payloads": []}
    local_process = codec_server(tmp_path / "a", trusted=["10.0.0.7"])
    async with local_process as (url, _), httpx.AsyncClient(base_url=url) as local:
        forged = {"X-Forwarded-For": "10.0.0.7", "X-Forwarded-User": "alice"}
        assert (await local.post("/decode", json=body, headers=forged)).status_code == 401
    real_proxy = codec_server(tmp_path / "b", trusted=["127.0.0.1"])
    async with real_proxy as (url, _), httpx.AsyncClient(base_url=url) as proxy:
        forwarded = {"X-Forwarded-For": "198.51.100.9", "X-Forwarded-User": "alice"}
        assert (await proxy.post("/decode", json=body, headers=forwarded)).status_code == 200
        twice = [("X-Forwarded-User", "mallory"), ("X-Forwarded-User", "alice")]
        assert (await proxy.post("/decode", json=body, headers=twice)).status_code == 401
        empty = [("X-Forwarded-User", "")]
        assert (await proxy.post("/decode", json=body, headers=empty)).status_code == 401


async def test_a_decompression_bomb_is_refused_within_the_bounds(tmp_path: Path) -> None:
    sealer = EncryptionCodec(KeyRing({"k1": KEY}), compress=True)
    bomb = sealer.encrypt(zeros(8 * MiB))
    assert len(bomb.data) < 16 * 1024  # what the attacker sends
    mib = sealer.encrypt(zeros(MiB))
    limits = {"max_decoded_bytes": 4 * MiB}
    async with (
        codec_server(tmp_path, **limits) as (url, token),
        httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http,
    ):
        one = await http.post("/decode", json={"payloads": [as_json(bomb)]})
        many = await http.post("/decode", json={"payloads": [as_json(mib)] * 5})
        within = await http.post("/decode", json={"payloads": [as_json(mib)] * 3})
    # Refused while inflating (never more than the budget in memory), saying why.
    for refused in (one, many):
        assert refused.status_code == 422
        assert f"decode to more than {4 * MiB} bytes" in refused.json()["error"]
    assert within.status_code == 200
    assert [base64.b64decode(p["data"]) for p in within.json()["payloads"]] == [bytes(MiB)] * 3


async def test_malformed_payloads_and_compressed_bodies_are_clear_4xx(tmp_path: Path) -> None:
    sealed = EncryptionCodec(KeyRing({"k1": KEY})).encrypt(zeros(10))
    async with (
        codec_server(tmp_path) as (url, token),
        httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http,
    ):
        for data in (b"", b"abc", sealed.data[:27]):
            cut = Payload(metadata=dict(sealed.metadata), data=data)
            answer = await http.post("/decode", json={"payloads": [as_json(cut)]})
            assert answer.status_code == 400, (data, answer.text)
            assert "truncated" in answer.json()["error"]
        other = Payload(metadata={**sealed.metadata, "compression": b"zstd"}, data=sealed.data)
        answer = await http.post("/decode", json={"payloads": [as_json(other)]})
        assert answer.status_code == 400 and "compression" in answer.json()["error"]
        # Request bodies are never inflated: a gzip (or zstd) bomb is refused as such.
        bomb = gzip.compress(b" " * (64 * MiB))
        for encoding in ("gzip", "zstd"):
            answer = await http.post(
                "/decode", content=bomb, headers={"Content-Encoding": encoding}
            )
            assert answer.status_code == 415, answer.text


async def test_a_body_over_the_limit_is_refused_unread_with_cors_headers(tmp_path: Path) -> None:
    async with codec_server(tmp_path, max_body_bytes=MiB) as (url, token):
        port = int(url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        chunk = b"%x\r\n%s\r\n" % (64 * 1024, b" " * (64 * 1024))
        writer.write(
            (
                f"POST /decode HTTP/1.1\r\nHost: codec\r\nAuthorization: Bearer {token}\r\n"
                f"Origin: {UI}\r\nTransfer-Encoding: chunked\r\n\r\n"
            ).encode()
            + chunk * 20  # 1.25 MiB, and the body never ends
        )
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)  # the server closes
        writer.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert f"access-control-allow-origin: {UI}".encode() in answer.lower()
    assert f"request body over {MiB} bytes".encode() in answer
