"""An MCP server's input-required result, as the "needs input" outcome of a tool call.

On protocol 2026-07-28 a server that needs the user's input (elicitation) answers a
`tools/call` with an `InputRequiredResult`: its questions and an opaque `request_state`.
Nothing waits inside the activity: it completes with an error outcome whose structured
value carries the questions and the state (`INPUT_REQUIRED_KEY`); the run pauses for the
user's answer and runs the call again with it (`workflows/gates/_input_gate.py`).

Only form elicitation can be answered this way. A server asking for something else (its
LLM through sampling, the client's roots, a URL to open) fails the call with a clear,
non-retryable error the model reads.
"""

from __future__ import annotations

from typing import Any

from durable_tools.protocol._input_types import INPUT_REQUIRED_KEY, InputQuestion, InputRequired
from durable_tools.tools import ContentBlock, ToolExecutionError, ToolResult

__all__ = ["is_input_required", "needs_input_result"]


def is_input_required(raw: dict[str, Any]) -> bool:
    """True when a `tools/call` answer (wire dict) is an input-required result."""
    return raw.get("resultType") == "input_required"


def needs_input_result(raw: dict[str, Any], *, server: str, tool: str) -> ToolResult:
    """The "needs input" result for an input-required answer of `tool` on `server`.

    Raises:
        ToolExecutionError: non-retryable; the server asked for something other than a
            form answer from the user, or asked nothing.
    """
    questions: list[InputQuestion] = []
    for key, request in (raw.get("inputRequests") or {}).items():
        method = request.get("method") if isinstance(request, dict) else None
        params = request.get("params") if isinstance(request, dict) else None
        if method != "elicitation/create" or not isinstance(params, dict):
            raise _unsupported(server, tool, f"a {method or 'malformed'} request")
        if params.get("mode", "form") != "form":
            raise _unsupported(server, tool, f"a {params.get('mode')}-mode elicitation")
        questions.append(
            InputQuestion(
                key=str(key),
                message=str(params.get("message", "")),
                requested_schema=dict(params.get("requestedSchema") or {}),
            )
        )
    if not questions:
        raise _unsupported(server, tool, "an input-required result without questions")
    needed = InputRequired(questions=questions, request_state=raw.get("requestState"))
    asked = "; ".join(q.message for q in questions)
    return ToolResult(
        content=[
            ContentBlock(text=f"MCP server {server!r} needs the user's input for {tool}: {asked}")
        ],
        structured={INPUT_REQUIRED_KEY: needed.model_dump(mode="json")},
        is_error=True,
    )


def _unsupported(server: str, tool: str, what: str) -> ToolExecutionError:
    return ToolExecutionError(
        f"MCP server {server!r} asked for {what} during {tool}; this client answers only "
        "form elicitation (a question for the user), so the call did not complete",
        retryable=False,
        details={"tool": tool, "mcp_server": server},
    )
