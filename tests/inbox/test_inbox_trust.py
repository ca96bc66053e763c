"""Who the inbox believes, against the real uvicorn server: the trusted proxy is the TCP peer
(never what forwarding headers claim), its user header must be one clean value, and a
session cookie stops working everywhere once its user logs out."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from inbox_support import csrf_token, login, make_app, make_users, raw_exchange, served
from temporalio.client import Client

from durable_tools.codec import EncryptionCodec, KeyRing
from durable_tools.codec.server import CodecServerConfig, create_codec_app
from durable_tools.inbox import AuthConfig, EndedSessions

NOBODY = f"?agent=no-such-agent-{uuid.uuid4().hex[:8]}"
"""A filter that lists nothing: the tests here are about who asks, not what is listed."""


async def test_forwarding_headers_from_a_local_process_do_not_make_it_the_proxy(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    app = make_app(client, task_queue, users, trusted=["10.0.0.7"])
    forged = [
        {"X-Forwarded-For": "10.0.0.7", "X-Forwarded-User": "alice"},
        {"X-Forwarded-For": "10.0.0.7, 10.0.0.7", "X-Forwarded-User": "alice"},
        {"Forwarded": "for=10.0.0.7", "X-Forwarded-User": "alice"},
        {"X-Real-IP": "10.0.0.7", "X-Forwarded-User": "alice"},
    ]
    async with served(app) as server, httpx.AsyncClient(base_url=server.url) as local:
        for headers in forged:
            listed = await local.get(f"/api/pending{NOBODY}", headers=headers)
            assert listed.status_code == 401, (headers, listed.text)
            page = await local.get("/", headers=headers)
            assert page.status_code == 303 and page.headers["location"].startswith("/login")
            decided = await local.post(
                "/api/runs/some-run/calls/c1/decide",
                json={"approve": True, "arguments_hash": "0" * 64},
                headers=headers,
            )
            assert decided.status_code == 401, headers


async def test_a_trusted_proxy_is_its_socket_peer_and_sends_one_clean_user(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    app = make_app(client, task_queue, users, trusted=["127.0.0.1"])
    url = f"/api/pending{NOBODY}"
    async with served(app) as server, httpx.AsyncClient(base_url=server.url) as proxy:
        # A real proxy says whom it forwards for: the peer it is stays what counts.
        forwarded = {"X-Forwarded-For": "198.51.100.9", "X-Forwarded-User": "carol"}
        listed = await proxy.get(url, headers=forwarded)
        assert listed.status_code == 200, listed.text
        assert listed.json()["user"] == "carol"
        # Header names are case-insensitive: the same header, the same user.
        listed = await proxy.get(url, headers={"x-FORWARDED-user": "carol"})
        assert listed.status_code == 200 and listed.json()["user"] == "carol"
        # Underscores are not dashes: a look-alike header is no user header at all.
        look_alike = await proxy.get(url, headers={"X_Forwarded_User": "mallory"})
        assert look_alike.status_code == 401
        # Two user headers (a client's passed through, then the proxy's): refused.
        twice = [("X-Forwarded-User", "mallory"), ("X-Forwarded-User", "carol")]
        assert (await proxy.get(url, headers=twice)).status_code == 401
        for value in (b"", "al\u00efce".encode(), "carol\u200b".encode(), b"car ol", b"carol\tx"):
            answer = await proxy.get(url, headers=[(b"X-Forwarded-User", value)])
            assert answer.status_code == 401, value
        # Whitespace around a value is not part of it in HTTP: the server drops it.
        head = (
            f"GET {url} HTTP/1.1\r\nHost: inbox\r\nConnection: close\r\n"
            "X-Forwarded-User:   carol  \r\n\r\n"
        )
        raw = await raw_exchange(server.port, head.encode())
        assert raw.startswith(b"HTTP/1.1 200") and b'"user":"carol"' in raw
        # Another local address is another peer: not the proxy, whatever it forwards.
        other = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(base_url=server.url, transport=other) as neighbour:
            claim = {"X-Forwarded-For": "127.0.0.1", "X-Forwarded-User": "carol"}
            assert (await neighbour.get(url, headers=claim)).status_code == 401


async def test_a_session_cookie_is_refused_everywhere_after_logout(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    secret = "shared-secret-" + uuid.uuid4().hex
    codec = EncryptionCodec(KeyRing({"k1": bytes(range(32))}))
    codec_app = create_codec_app(
        codec, CodecServerConfig(auth=AuthConfig(users.store()), session_secret=secret)
    )
    inbox_app = make_app(client, task_queue, users, session_secret=secret)
    async with (
        served(inbox_app) as inbox,
        served(codec_app) as codec_server,
        httpx.AsyncClient(base_url=inbox.url) as browser,
    ):
        await login(browser, users.alice)
        copied = {"Cookie": f"durable_tools_inbox={browser.cookies['durable_tools_inbox']}"}
        async with httpx.AsyncClient() as thief:

            async def statuses() -> tuple[int, int]:
                listed = await thief.get(f"{inbox.url}/api/pending{NOBODY}", headers=copied)
                decoded = await thief.post(
                    f"{codec_server.url}/decode", json={"payloads": []}, headers=copied
                )
                return listed.status_code, decoded.status_code

            assert await statuses() == (200, 200)
            # A page that lists nothing: the pending list of the whole server may be slow.
            page = await browser.get(f"/{NOBODY}")
            out = await browser.post("/logout", data={"csrf_token": csrf_token(page.text)})
            assert out.status_code == 303
            assert await statuses() == (401, 401)
    # A restarted inbox (same secret, same tokens file) still refuses it.
    again = make_app(client, task_queue, users, session_secret=secret)
    async with served(again) as inbox, httpx.AsyncClient(base_url=inbox.url) as thief:
        assert (await thief.get(f"/api/pending{NOBODY}", headers=copied)).status_code == 401
        # Signing in again works: only the ended session is refused.
        await login(thief, users.alice)
        assert (await thief.get(f"/api/pending{NOBODY}")).status_code == 200


def test_the_ended_sessions_stay_bounded_and_fail_closed(tmp_path: Path) -> None:
    path = tmp_path / "logouts.json"
    ended = EndedSessions(path, capacity=3)
    sessions = [ended.begin() for _ in range(5)]
    for session in sessions[:3]:
        ended.end(*session)
    # Another process reading the same file sees the same.
    other = EndedSessions(path, capacity=3)
    assert [other.is_live(*s) for s in sessions] == [False, False, False, True, True]
    # Full: rather than forget an ended session, every session issued so far ends.
    ended.end(*sessions[3])
    assert not any(other.is_live(*s) for s in sessions)
    assert len(path.read_text()) < 200  # the list was emptied, the watermark kept
    later = ended.begin()
    assert other.is_live(*later)
    assert len(other) == 0  # a reader drops what the watermark covers, too
    # A cookie from before sessions had ids, or an expired one: not live.
    assert not other.is_live(None, None)
    assert not other.is_live(later[0], later[1] - 13 * 3600)
    assert not other.is_live(later[0], float("nan"))
    # An unreadable file ends every session issued until then (fail closed).
    path.write_text("{not json")
    assert not EndedSessions(path).is_live(*later)
