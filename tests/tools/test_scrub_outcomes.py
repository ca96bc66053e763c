"""Secrets are scrubbed from formatted outcomes, what goes to the store, and tool events."""

from __future__ import annotations

import json
from urllib.parse import quote_plus

from durable_tools import ContentBlock, ToolContext, ToolRegistry, ToolResult
from durable_tools.tools import InMemoryArtifactStore, ToolEvent, format_result
from durable_tools.tools._formatting import to_tool_result

SECRET = "sk-OUTCOME/SENTINEL+7d1e"
TOKEN = "oauth-ACCESS-TOKEN-5b2c99"


def test_result_content_structured_and_stored_artifact_are_scrubbed() -> None:
    store = InMemoryArtifactStore()
    value = {"echo": SECRET, "url": f"/x?key={quote_plus(SECRET)}", "pad": "z" * 3000}
    outcome = format_result(
        to_tool_result(value),
        call_id="c1",
        tool_name="t",
        limit_bytes=1000,
        store=store,
        secrets=[SECRET],
    )
    assert SECRET not in outcome.content and quote_plus(SECRET) not in outcome.content
    assert "[redacted]" in outcome.content
    (ref,) = outcome.artifacts
    stored = store.get(ref).decode()
    assert "[redacted]" in stored and SECRET not in stored and quote_plus(SECRET) not in stored

    small = format_result(to_tool_result({"repr": repr([SECRET])}), call_id="c2", tool_name="t")
    assert SECRET in json.dumps(small.structured)  # without secrets, nothing is scrubbed
    scrubbed = format_result(
        to_tool_result({"repr": repr([SECRET])}), call_id="c2", tool_name="t", secrets=[SECRET]
    )
    assert scrubbed.structured == {"repr": "['[redacted]']"}


def test_a_secret_cut_by_the_limit_is_scrubbed_before_the_cut() -> None:
    text = "a" * 180 + SECRET
    outcome = format_result(
        ToolResult(content=[ContentBlock(text=text)], skipped=None),
        call_id="c1",
        tool_name="t",
        limit_bytes=256,
        secrets=[SECRET],
    )
    assert SECRET[:8] not in outcome.content


async def test_event_listeners_never_see_secrets_or_the_access_token() -> None:
    registry = ToolRegistry()
    seen: list[ToolEvent] = []
    registry.events.on("*", seen.append)

    @registry.tool(read_only=True)
    def call(ctx: ToolContext) -> str:
        """Fails quoting the key URL-encoded and the token raw."""
        raise RuntimeError(
            f"GET /v1?api_key={quote_plus(ctx.secret('k'))} with Bearer {ctx.access_token}"
        )

    context = ToolContext(
        tool_call_id="c1", tool_name="call", secrets={"k": SECRET}, access_token=TOKEN
    )
    try:
        await registry.invoke("call", {}, context)
    except Exception as error:
        raised = str(error)
    else:
        raise AssertionError("the tool should fail")
    assert quote_plus(SECRET) in raised  # the error itself is scrubbed later, by the activity
    failed = [e for e in seen if e.name == "tool.failed"]
    assert failed and failed[0].message is not None and "[redacted]" in failed[0].message
    for event in seen:
        dumped = repr(event)
        for leak in (SECRET, quote_plus(SECRET), TOKEN):
            assert leak not in dumped
