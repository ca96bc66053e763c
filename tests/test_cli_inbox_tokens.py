"""`durable-tools inbox token list / rotate / remove`: tokens shown once, never listed; the
file stays 0600, is replaced atomically, and concurrent changes never lose one."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from cli_support import cli, cli_json
from durable_tools import DurableTools
from durable_tools._callers._tokens import hash_token
from durable_tools.inbox import (
    AuthConfig,
    InboxConfig,
    InboxServer,
    TokenStore,
    add_token,
    create_app,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_list_shows_users_but_never_a_token(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "tokens.json"
    alice = add_token(path, "alice", ["ops", "admins"])
    bob = add_token(path, "bob")
    file = ["--tokens-file", str(path)]
    code, out, err = await cli(capsys, "inbox", "token", "list", *file)
    assert code == 0, err
    for secret in (alice, bob, hash_token(alice), hash_token(bob)):
        assert secret not in out + err
    assert "admins,ops" in out and "bob" in out
    assert hash_token(alice)[:8] in out  # a fingerprint tells tokens apart
    listed = await cli_json(capsys, "inbox", "token", "list", *file)
    assert [(u["user"], u["groups"]) for u in listed] == [("alice", ["admins", "ops"]), ("bob", [])]
    assert listed[0]["fingerprint"] == hash_token(alice)[:8]
    assert listed[0]["created"].startswith("20") and listed[0]["created"].endswith("+00:00")
    assert alice not in json.dumps(listed) and hash_token(alice) not in json.dumps(listed)

    # A hand-edited file with an old entry (no time) and a hostile time: shown, inert.
    data = json.loads(path.read_text())
    data["users"]["bob"]["created"] = "\x1b[2J2026"
    del data["users"]["alice"]["created"]
    path.write_text(json.dumps(data))
    code, out, _ = await cli(capsys, "inbox", "token", "list", *file)
    assert code == 0 and "\x1b" not in out and out.count("unknown") == 2

    code, out, _ = await cli(capsys, "inbox", "token", "list", "--tokens-file", str(tmp_path / "x"))
    assert code == 0 and "no users" in out


async def test_rotate_prints_the_new_token_once_and_the_old_one_stops_working(
    tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "tokens.json"
    old = add_token(path, "alice", ["ops"])
    path.chmod(0o644)  # loosened by hand: the next write puts it back
    store = TokenStore(path)
    code, out, err = await cli(
        capsys, "inbox", "token", "rotate", "alice", "--tokens-file", str(path)
    )
    assert code == 0, err
    new = out.strip()
    assert out == new + "\n" and new != old and new not in err
    assert new not in path.read_text() and hash_token(new) in path.read_text()
    assert _mode(path) == 0o600
    assert store.user_for(old) is None
    found = store.user_for(new)
    assert found is not None and (found.name, found.groups) == ("alice", ("ops",))

    before = path.read_text()
    for name in ("mallory", "alice ", "../alice", "al\x1bice", "a" * 10_000):
        code, out, err = await cli(
            capsys, "inbox", "token", "rotate", name, "--tokens-file", str(path)
        )
        assert code == 2 and out == "" and "\x1b" not in err and len(err) < 400, err
    assert (
        "has no user 'mallory'"
        in (await cli(capsys, "inbox", "token", "rotate", "mallory", "--tokens-file", str(path)))[2]
    )
    assert path.read_text() == before  # a refused change leaves the file as it was


async def test_remove_takes_a_user_out(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "tokens.json"
    alice = add_token(path, "alice")
    bob = add_token(path, "bob")
    file = ["--tokens-file", str(path)]
    code, out, err = await cli(capsys, "inbox", "token", "remove", "alice", *file)
    assert code == 0, err and "removed alice" in out
    assert alice not in out
    store = TokenStore(path)
    assert store.user_for(alice) is None and store.user_for(bob) is not None
    assert _mode(path) == 0o600
    code, _, err = await cli(capsys, "inbox", "token", "remove", "alice", *file)
    assert code == 2 and "has no user 'alice'" in err
    assert [u["user"] for u in await cli_json(capsys, "inbox", "token", "list", *file)] == ["bob"]


def test_concurrent_changes_lose_none(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    barrier = threading.Barrier(8)
    tokens: dict[str, str] = {}

    def add_many(worker: int) -> None:
        barrier.wait()
        for i in range(15):
            name = f"user{worker}-{i}"
            tokens[name] = add_token(path, name)

    threads = [threading.Thread(target=add_many, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store = TokenStore(path)
    assert len(json.loads(path.read_text())["users"]) == 120
    assert all(store.user_for(token) is not None for token in tokens.values())
    assert _mode(path) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tokens-")] == []


async def test_a_running_inbox_follows_rotate_and_remove(
    client: Client, task_queue: str, tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "tokens.json"
    old = add_token(path, "alice")
    bob = add_token(path, "bob")
    config = InboxConfig(auth=AuthConfig(TokenStore(path)), session_secret="s" * 32)
    server = InboxServer(create_app(DurableTools(client, task_queue), config), port=0)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url) as http:

            async def status(token: str) -> int:
                # Filtered to no agent: the session's server holds other tests' runs, and
                # listing them (their workers gone) is not what this test measures.
                answer = await http.get(
                    "/api/pending?agent=nobody-here",
                    headers={"Authorization": f"Bearer {token}"},
                )
                return answer.status_code

            assert await status(old) == 200
            file = ["--tokens-file", str(path)]
            code, out, _ = await cli(capsys, "inbox", "token", "rotate", "alice", *file)
            assert code == 0
            assert (await status(old), await status(out.strip())) == (401, 200)
            code, _, _ = await cli(capsys, "inbox", "token", "remove", "bob", *file)
            assert code == 0 and await status(bob) == 401
    finally:
        await server.stop()


async def test_a_planted_lock_symlink_is_not_followed(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "tokens.json"
    add_token(path, "alice")
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    lock = tmp_path / ".tokens.json.lock"
    lock.unlink()
    lock.symlink_to(victim)
    code, out, err = await cli(
        capsys, "inbox", "token", "rotate", "alice", "--tokens-file", str(path)
    )
    assert code == 2 and out == "" and "Traceback" not in err
    assert victim.read_text() == "keep me"
