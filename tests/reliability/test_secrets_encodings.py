"""A secret a tool returns or quotes in the less common encodings (MIME base64 over
several lines, double URL-encoding, every byte percent-encoded, hex, HTML references,
JSON `\\u` escapes, quoted-printable, a line-wrapped value) leaves no trace in the run's
history (payloads decoded, strings unescaped), its conversation, or the tool events."""

from __future__ import annotations

import base64
import contextlib
import html
import json
import quopri
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from temporalio.client import Client
from test_secrets_scan import decoded_history

from durable_tools import (
    DurableTools,
    RetrySpec,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
)
from durable_tools.tools import ToolEvent
from support import answer, calls, running_worker, write_script

# Over 57 bytes (MIME wraps its base64), with characters each encoding changes.
SECRET = 'sk-ENC/"q"+\\=é 0c4f9a71-' + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij0123456789" + "-5e7d"


def every_byte(secret: str) -> str:
    """Every byte percent-encoded, hex digits in alternating case."""
    hexes = [f"{b:02x}" for b in secret.encode()]
    return "".join("%" + (h.upper() if i % 2 else h) for i, h in enumerate(hexes))


def mime(data: str) -> str:
    return base64.encodebytes(data.encode()).decode()


FORMS: dict[str, Callable[[str], str]] = {
    "mime": mime,
    "mime-crlf": lambda s: mime(s).replace("\n", "\r\n"),
    "mime-basic-1": lambda s: mime(f"u:{s}"),
    "mime-basic-2": lambda s: mime(f"me:{s}"),
    "mime-basic-3": lambda s: mime(f"you:{s}"),
    "base64url-unpadded": lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
    "double-quote": lambda s: quote(quote(s)),
    "double-quote_plus": lambda s: quote_plus(quote_plus(s)),
    "every-byte": every_byte,
    "every-byte-upper": lambda s: every_byte(s).upper(),
    "hex": lambda s: s.encode().hex(),
    "html": html.escape,
    "html-numeric": lambda s: "".join(f"&#{ord(c)};" for c in s),
    "json-u": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "json-slashes": lambda s: json.dumps(s).replace("/", "\\/"),
    "quoted-printable": lambda s: quopri.encodestring(s.encode()).decode(),
    "wrapped": lambda s: "\n".join(textwrap.wrap(s, 20)),
}


def leaks(secret: str) -> dict[str, str]:
    """What a leak of each form looks like once line breaks are taken out: the form
    itself, or for base64 the characters that depend on the secret alone."""
    found = {name: "".join(form(secret).split()) for name, form in FORMS.items()}
    for name in [n for n in found if n.startswith(("mime", "base64"))]:
        found[name] = found[name][8:-8]  # not the prefix nor the bits it mixes in
    return found


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
        with contextlib.suppress(ValueError):  # JSON text: its strings, unescaped
            yield from strings(json.loads(node))
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def assert_clean(where: str, text: str) -> None:
    squeezed = ["".join(s.replace("\\n", "").replace("\\r", "").split()) for s in strings(text)]
    for name, leak in leaks(SECRET).items():
        for piece in squeezed:
            assert leak not in piece, f"the {name} form leaked into {where}"


def registry(events: list[ToolEvent]) -> ToolRegistry:
    tools = ToolRegistry()
    tools.events.on("*", events.append)

    @tools.tool(read_only=True)
    def echo(form: str, ctx: ToolContext) -> str:
        """Return the key in one encoding."""
        return f"here it is:\n{FORMS[form](ctx.secret('api_key'))}\nend"

    @tools.tool(read_only=True)
    def structured(ctx: ToolContext) -> dict[str, Any]:
        """Every encoding at once, as a structured result."""
        return {name: form(ctx.secret("api_key")) for name, form in FORMS.items()}

    @tools.tool(read_only=True)
    def refuse(ctx: ToolContext) -> str:
        """Fail quoting the key double URL-encoded and as a MIME body."""
        key = ctx.secret("api_key")
        raise ToolExecutionError(
            f"GET /v1?next={FORMS['double-quote'](key)} refused; body:\n{mime(key)}",
            retryable=False,
        )

    @tools.tool(idempotent=True, retry=RetrySpec(initial_interval=0.05, maximum_attempts=2))
    def flaky(ctx: ToolContext) -> str:
        """A plain exception quoting the key, every byte encoded, on the first attempt."""
        if ctx.attempt < 2:
            raise ConnectionError(f"POST /x?k={every_byte(ctx.secret('api_key'))} reset")
        return "ok"

    return tools


async def test_secrets_in_uncommon_encodings_leave_no_trace(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    events: list[ToolEvent] = []
    model = write_script(
        tmp_path,
        [
            # At most 16 calls a turn (the default limit).
            calls(*((f"e-{form}", "echo", {"form": form}) for form in list(FORMS)[:10])),
            calls(*((f"e-{form}", "echo", {"form": form}) for form in list(FORMS)[10:])),
            calls(("s1", "structured", {}), ("r1", "refuse", {}), ("f1", "flaky", {})),
            answer("done"),
        ],
    )
    async with running_worker(client, registry(events), task_queue, secrets={"api_key": SECRET}):
        run = await DurableTools(client, task_queue).start("leak it", model=model)
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    for form in FORMS:  # each form reached the model, scrubbed
        assert "[redacted]" in replies[f"e-{form}"], (form, replies[f"e-{form}"])
    assert replies["s1"].count("[redacted]") >= len(FORMS)
    assert "refused" in replies["r1"] and "[redacted]" in replies["r1"]
    assert {r.call_id: r.status for r in timeline}["f1"] == "completed"

    history = decoded_history(await run.handle.fetch_history())
    assert "here it is:\\n[redacted]" in history  # the payloads really were decoded
    assert_clean("the history", history)
    assert_clean("the conversation", json.dumps([m.model_dump(mode="json") for m in conversation]))
    assert_clean("the timeline", json.dumps([r.model_dump(mode="json") for r in timeline]))
    failed = [e for e in events if e.name == "tool.failed"]
    assert failed and all("[redacted]" in (e.message or "") for e in failed)
    assert_clean("the tool events", json.dumps([repr(e) for e in events]))
