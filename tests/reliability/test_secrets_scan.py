"""A sentinel secret used by tools, quoted in their errors or returned in their results
(raw or encoded), never leaves the worker: not in the run's history (payloads decoded),
its queries, `show --json`, tool events, the artifact store, nor any log line of the run."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, quote_plus

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from durable_tools import (
    DurableTools,
    Identity,
    Injected,
    OAuthRequirement,
    RetrySpec,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
)
from durable_tools.cli import main
from durable_tools.tools import FileSystemArtifactStore, ToolEvent
from support import answer, calls, running_worker, write_script

SENTINEL = "sk-SCAN-SENTINEL-0c4f9a71"


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def call_api(path: str, api_key: Annotated[str, Injected("api_key", secret=True)]) -> str:
        """Call an API with the worker's key."""
        if path == "/reject":
            raise ToolExecutionError(f"upstream rejected key {api_key}", retryable=False)
        return f"GET {path} ok"

    @tools.tool(idempotent=True, retry=RetrySpec(initial_interval=0.05, maximum_attempts=3))
    def flaky_upload(name: str, ctx: ToolContext) -> str:
        """Upload; fails with a plain exception quoting the key on early attempts."""
        key = ctx.secret("api_key")
        if ctx.attempt < 3:
            raise ConnectionError(f"POST /upload?key={key} reset by peer")
        return f"uploaded {name}"

    @tools.tool(read_only=True, retry=RetrySpec(initial_interval=0.05, maximum_attempts=2))
    def always_broken(ctx: ToolContext) -> str:
        """Fails with an unclassified error quoting the key."""
        raise RuntimeError(f"config dump: api_key={ctx.secret('api_key')}")

    return tools


async def test_sentinel_never_in_history_queries_or_logs(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio")
    caplog.set_level(logging.DEBUG, logger="durable_tools")
    model = write_script(
        tmp_path,
        [
            calls(
                ("a1", "call_api", {"path": "/users"}),
                ("a2", "call_api", {"path": "/reject"}),
                ("u1", "flaky_upload", {"name": "report.csv"}),
                ("b1", "always_broken", {}),
            ),
            answer("done"),
        ],
    )
    async with running_worker(client, registry(), task_queue, secrets={"api_key": SENTINEL}):
        run = await DurableTools(client, task_queue).start("use the api", model=model)
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
        events = await run.events()
        snapshot = await run.status()
    assert result.status == RunStatus.COMPLETED
    by_id = {r.call_id: r for r in timeline}
    assert by_id["a1"].status == "completed"
    assert by_id["a2"].status == "failed" and "[redacted]" in (by_id["a2"].result or "")
    assert by_id["u1"].status == "completed" and by_id["u1"].attempts == 3
    assert by_id["b1"].status == "failed"

    history = (await run.handle.fetch_history()).to_json()
    assert "upstream rejected key" in history  # the error itself is there, scrubbed
    assert SENTINEL not in history
    for value in (conversation, timeline, events, [snapshot]):
        assert all(SENTINEL not in item.model_dump_json() for item in value)

    # Logs of the worker and the SDK at DEBUG, exception text included.
    assert any("Completing activity" in r.getMessage() for r in caplog.records)
    assert SENTINEL not in caplog.text
    for record in caplog.records:
        assert SENTINEL not in record.getMessage()
        assert SENTINEL not in str(record.__dict__)


# Every encoding below changes this value ('/', quotes, '+', '=', a backslash, a space,
# 'é'), while each keeps its tail as is: finding the tail anywhere means a leak.
ENCODED_SENTINEL = 'sk-ENC/"q"+\\=é 0c4f9a71'
TAIL = "0c4f9a71"
TOKEN = "oat-ACCESS-TOKEN-51d3e8b6"
TOKEN_TAIL = "51d3e8b6"

FORMS = {
    "raw": lambda k: k,
    "repr": repr,
    "ascii": ascii,
    "json": json.dumps,
    "json-utf8": lambda k: json.dumps(k, ensure_ascii=False),
    "quote": lambda k: quote(k, safe=""),
    "quote-path": quote,
    "quote_plus": quote_plus,
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "basic-auth": lambda k: "Basic " + base64.b64encode(f"me:{k}".encode()).decode(),
}
BASE64_FORMS = {
    FORMS["base64"](ENCODED_SENTINEL),
    FORMS["basic-auth"](ENCODED_SENTINEL).removeprefix("Basic "),
    base64.b64encode(TOKEN.encode()).decode(),
}


Key = Annotated[str, Injected("api_key", secret=True)]


class StaticGrant:
    """A worker-side OAuth broker whose user has already authorized: one fixed token."""

    async def grant_ref(self, identity: Identity, requirement: OAuthRequirement) -> str | None:
        return "grant-1"

    async def authorization_url(
        self, identity: Identity, requirement: OAuthRequirement, workflow_id: str, call_id: str
    ) -> str:
        raise AssertionError("the user has authorized already")

    async def access_token(self, identity: Identity, requirement: OAuthRequirement) -> str:
        return TOKEN


def leaking_registry(events: list[ToolEvent]) -> ToolRegistry:
    tools = ToolRegistry()
    tools.events.on("*", events.append)

    @tools.tool(read_only=True)
    def echo_key(form: str, api_key: Key) -> str:
        """Return the key in one encoding."""
        return f"here it is: {FORMS[form](api_key)}"

    @tools.tool(read_only=True)
    def list_page(api_key: Key) -> dict[str, Any]:
        """A page whose link quotes the key (structured result)."""
        return {
            "items": [1, 2],
            "next": f"https://api.example/items?page=2&api_key={quote_plus(api_key)}",
            "config": repr({"api_key": api_key}),
        }

    @tools.tool(read_only=True)
    def big_dump(api_key: Key) -> str:
        """An output over the inline limit, so it goes to the artifact store."""
        return "".join(f"line {i} {FORMS['json'](api_key)}\n" for i in range(800))

    @tools.tool(read_only=True, oauth=OAuthRequirement(provider="calendar"))
    def whoami(ctx: ToolContext) -> str:
        """Return the OAuth access token, raw and base64."""
        assert ctx.access_token is not None
        encoded = base64.b64encode(ctx.access_token.encode()).decode()
        return f"token {ctx.access_token} ({encoded})"

    @tools.tool(read_only=True)
    def reject(api_key: Key) -> str:
        """Fail with an error quoting the key URL- and JSON-encoded."""
        raise ToolExecutionError(
            f"GET /v1?key={quote(api_key, safe='')} refused: {json.dumps(api_key)}",
            retryable=False,
        )

    return tools


def decoded_history(history: WorkflowHistory) -> str:
    """The history's JSON plus every payload's data, base64-decoded (the JSON form
    base64-encodes payloads, so a scan of it alone could never find a leak)."""
    raw = history.to_json()
    parts = [raw]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("data"), str) and "metadata" in node:
                parts.append(base64.b64decode(node["data"]).decode("utf-8", "replace"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(raw))
    return "\n".join(parts)


def assert_clean(where: str, text: str) -> None:
    for leak in (TAIL, TOKEN_TAIL, *BASE64_FORMS):
        assert leak not in text, f"{leak!r} leaked into {where}"


async def test_secrets_returned_in_any_encoding_are_scrubbed_everywhere(
    client: Client,
    env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG, logger="temporalio")
    caplog.set_level(logging.DEBUG, logger="durable_tools")
    monkeypatch.setenv("TEMPORAL_ADDRESS", env.client.service_client.config.target_host)
    monkeypatch.setenv("TEMPORAL_NAMESPACE", env.client.namespace)
    monkeypatch.setenv("DURABLE_TOOLS_TASK_QUEUE", task_queue)
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path / "home"))
    events: list[ToolEvent] = []
    artifacts = tmp_path / "artifacts"
    model = write_script(
        tmp_path,
        [
            calls(*((f"e-{form}", "echo_key", {"form": form}) for form in FORMS)),
            calls(
                ("p1", "list_page", {}),
                ("d1", "big_dump", {}),
                ("w1", "whoami", {}),
                ("r1", "reject", {}),
            ),
            answer("done"),
        ],
    )
    async with running_worker(
        client,
        leaking_registry(events),
        task_queue,
        secrets={"api_key": ENCODED_SENTINEL},
        artifact_store=FileSystemArtifactStore(artifacts),
        oauth=StaticGrant(),
    ):
        run = await DurableTools(client, task_queue).start("leak it", model=model)
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
        run_events = await run.events()
        code = await asyncio.to_thread(main, ["show", run.run_id, "--json"])
        shown, err = capsys.readouterr()
    assert result.status == RunStatus.COMPLETED
    assert code == 0, err
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    for form in FORMS:  # each form reached the model, scrubbed
        assert "[redacted]" in replies[f"e-{form}"], (form, replies[f"e-{form}"])
    assert "page=2&api_key=[redacted]" in replies["p1"]
    assert replies["w1"].startswith("token [redacted] (")
    assert "refused" in replies["r1"]
    by_id = {r.call_id: r for r in timeline}
    assert by_id["d1"].status == "completed" and "output truncated" in replies["d1"]

    history = decoded_history(await run.handle.fetch_history())
    assert "here it is: [redacted]" in history  # the payloads really were decoded
    assert_clean("the history", history)
    for name, value in (
        ("the conversation", conversation),
        ("the timeline", timeline),
        ("the run events", run_events),
    ):
        assert_clean(name, json.dumps([item.model_dump(mode="json") for item in value]))
    assert json.loads(shown)["timeline"] and "[redacted]" in shown
    assert_clean("show --json", shown)
    assert_clean("tool events", repr(events))
    failed = [e for e in events if e.name == "tool.failed"]
    assert failed and "[redacted]" in (failed[0].message or "")
    stored = [
        path.read_bytes().decode("utf-8", "replace")
        for path in artifacts.rglob("*")
        if path.is_file()
    ]
    assert any('line 799 "[redacted]"' in text for text in stored)  # the big output, scrubbed
    for text in stored:
        assert_clean("the artifact store", text)
    assert_clean("the logs", caplog.text)
    for record in caplog.records:
        assert_clean("a log record", str(record.__dict__))
