"""Request bodies the inbox refuses without reading them, against the real uvicorn server:
a body over the limit gets a 413 as soon as its declared length or its streamed bytes pass
the limit, and the connection is closed instead of the rest being read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from inbox_support import make_app, make_users, raw_exchange, served
from temporalio.client import Client

from durable_tools.inbox import DEFAULT_MAX_BODY_BYTES

HUGE = 400 * 1024 * 1024
CHUNK = 64 * 1024


def head(path: str, token: str, framing: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: inbox\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()


async def test_a_body_over_the_limit_is_refused_before_it_is_read(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    decide = "/api/runs/some-run/calls/c1/decide"
    async with served(make_app(client, task_queue, users)) as server:
        # Declared too large: refused with nothing of the body sent, and the connection ends.
        declared = await raw_exchange(
            server.port, head(decide, users.alice, f"Content-Length: {HUGE}"), timeout=10
        )
        assert declared.startswith(b"HTTP/1.1 413"), declared[:200]
        assert b"connection: close" in declared.lower()
        # Chunked, never finished: refused once the streamed bytes pass the limit, although
        # the body has not ended (so the server cannot have waited for all of it).
        chunk = b"%x\r\n%s\r\n" % (CHUNK, b" " * CHUNK)
        passed = DEFAULT_MAX_BODY_BYTES // CHUNK + 2
        streamed = await raw_exchange(
            server.port,
            head(decide, users.alice, "Transfer-Encoding: chunked") + chunk * passed,
            timeout=10,
        )
        assert streamed.startswith(b"HTTP/1.1 413"), streamed[:200]
        assert f"request body over {DEFAULT_MAX_BODY_BYTES} bytes".encode() in streamed
        # A client streaming 400 MiB: the server stops reading long before the end.
        sent = 0

        async def body() -> AsyncIterator[bytes]:
            nonlocal sent
            for _ in range(HUGE // CHUNK):
                sent += CHUNK
                yield b" " * CHUNK

        async with httpx.AsyncClient(base_url=server.url) as script:
            alice = {"Authorization": f"Bearer {users.alice}"}
            try:
                answer = await script.post(decide, content=body(), headers=alice)
                assert answer.status_code == 413
            except httpx.TransportError:
                pass  # the server closed while the client was still sending: also refused
            # What the socket buffers took (tcp_rmem may reach 32 MiB) at most, not 400 MiB.
            assert sent < 64 * 1024 * 1024, f"the client got {sent} bytes out"
            # The login form is bounded too.
            login = await script.post("/login", content=b"token=" + b"x" * (2 * CHUNK))
            assert login.status_code == 413
            # Nested deeper than the JSON parser goes: a 400, not a server error.
            nested = await script.post(decide, content=b"[" * 50_000, headers=alice)
            assert nested.status_code == 400 and "JSON object" in nested.json()["error"]
            # And a body within the limit is read as usual.
            fine = await script.post(decide, json={"approve": True}, headers=alice)
            assert fine.status_code == 400 and "arguments_hash" in fine.json()["error"]
