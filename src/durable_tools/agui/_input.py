"""What a request to the AG-UI endpoint may carry: its body parsed into the protocol's own
`RunAgentInput`, bounded and checked, and the names derived from it (the session a thread
is, the message id a user message is sent under, the approval an interrupt names).

Everything here refuses with an `InputRefused` that names what was wrong and the HTTP
status it maps to; nothing reaches Temporal before it passed.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from ag_ui.core import ResumeEntry, RunAgentInput, TextPart, ToolMessage, UserMessage
from pydantic import ValidationError

from durable_tools.protocol._client_tools import (
    MAX_CLIENT_TOOL_TIMEOUT_SECONDS,
    MAX_CLIENT_TOOLS,
    ClientTool,
    client_tool_key,
)
from durable_tools.protocol._deciders import name_key
from durable_tools.protocol._limits import (
    MAX_CALL_ID_CHARS,
    MAX_CALLBACK_ERROR_CHARS,
    MAX_CALLBACK_RESULT_BYTES,
    MAX_MESSAGE_CHARS,
    MAX_REASON_CHARS,
)

__all__ = [
    "MAX_ID_CHARS",
    "ApprovalRef",
    "AuthorizationRef",
    "InputLimits",
    "InputRefused",
    "ToolResult",
    "approval_ref",
    "authorization_interrupt_id",
    "authorization_ref",
    "check_prefix",
    "checked_id",
    "checked_thread_id",
    "client_tools",
    "interrupt_id",
    "message_update_id",
    "parse_input",
    "resume_refs",
    "session_id",
    "tool_result_update_id",
    "tool_results",
    "user_text",
]

MAX_ID_CHARS = 128
"""Longest thread, run, message or interrupt id taken (AG-UI clients send UUIDs)."""
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_APPROVAL_PREFIX = "approval:"
_AUTHORIZATION_PREFIX = "authorization:"
_HASH = re.compile(r"[0-9a-f]{64}")


class InputRefused(ValueError):
    """A request the endpoint does not take.

    Attributes:
        status: The HTTP status it is answered with.
        message: What was wrong, for the client's developer.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class InputLimits:
    """Bounds on one `RunAgentInput` (the body's size is bounded before it is read)."""

    max_messages: int = 2_000
    """Messages a request may carry (clients send the whole thread each time)."""
    max_resume: int = 16
    """Resume entries a request may carry."""
    max_tools: int = 32
    """Client-declared (frontend) tools a request may carry (at most `MAX_CLIENT_TOOLS`;
    0 refuses any)."""
    client_tool_timeout: float = 3_600.0
    """Seconds a run waits for the front end's result of one frontend tool call; then the
    model reads a timeout error."""

    def __post_init__(self) -> None:
        if not 0 <= self.max_tools <= MAX_CLIENT_TOOLS:
            raise ValueError(f"max_tools is 0 to {MAX_CLIENT_TOOLS}, got {self.max_tools}")
        if not 0 < self.client_tool_timeout <= MAX_CLIENT_TOOL_TIMEOUT_SECONDS:
            raise ValueError(
                f"client_tool_timeout is over 0 and at most {MAX_CLIENT_TOOL_TIMEOUT_SECONDS:g} "
                f"seconds, got {self.client_tool_timeout}"
            )


def checked_id(value: str, what: str) -> str:
    """`value`, when it is a plain id of at most `MAX_ID_CHARS` characters.

    Raises:
        InputRefused: anything else (400), naming `what`.
    """
    if len(value) > MAX_ID_CHARS or not _ID.fullmatch(value):
        raise InputRefused(
            400,
            f"{what} must be 1 to {MAX_ID_CHARS} characters of A-Z a-z 0-9 . _ : - "
            f"(starting with a letter or digit), got {len(value)} characters",
        )
    return value


def checked_thread_id(value: str) -> str:
    """`value`, when it is a plain id (`checked_id`) without a dot.

    A session's sub-agents run as `<session>.<call id>`: a thread `T.c1` would name the
    workflow id of thread T's sub-agent for call c1, so thread ids hold no dot.

    Raises:
        InputRefused: anything else (400).
    """
    checked_id(value, "threadId")
    if "." in value:
        raise InputRefused(400, "threadId must not contain '.' (it names sub-agents)")
    return value


def _unicode(text: str, what: str) -> str:
    """`text`, when it is Unicode text that encodes as UTF-8 (no lone surrogate, which
    JSON's `\\ud800` escapes can spell and nothing downstream can store).

    Raises:
        InputRefused: a lone surrogate (400), naming `what`.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputRefused(
            400, f"{what} is not valid Unicode: a lone surrogate at character {error.start}"
        ) from None
    return text


def parse_input(body: bytes, limits: InputLimits) -> RunAgentInput:
    """The request's `RunAgentInput`, checked.

    Raises:
        InputRefused: not JSON (400), not a `RunAgentInput` (422), ids that are not
            plain identifiers (400), more messages, resume entries or tools than allowed
            (413 / 400).
    """
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputRefused(400, "the body must be a JSON RunAgentInput") from None
    if not isinstance(data, dict):
        raise InputRefused(400, "the body must be a JSON object (a RunAgentInput)")
    messages = data.get("messages")
    if isinstance(messages, list) and len(messages) > limits.max_messages:
        raise InputRefused(
            413, f"{len(messages):,} messages; the endpoint takes at most {limits.max_messages:,}"
        )
    resume = data.get("resume")
    if isinstance(resume, list) and len(resume) > limits.max_resume:
        raise InputRefused(400, f"{len(resume)} resume entries; at most {limits.max_resume}")
    try:
        run_input = RunAgentInput.model_validate(data)
    except (ValidationError, RecursionError) as error:
        problems = (
            error.errors(include_url=False, include_input=False)
            if isinstance(error, ValidationError)
            else [{"loc": (), "msg": "nested too deeply"}]
        )
        first = problems[0]
        where = ".".join(map(str, first["loc"])) or "body"
        raise InputRefused(422, f"not a RunAgentInput: {where}: {first['msg']}") from None
    checked_thread_id(run_input.thread_id)
    checked_id(run_input.run_id, "runId")
    for message in run_input.messages:
        checked_id(message.id, "a message id")
    if len(run_input.tools or []) > limits.max_tools:
        raise InputRefused(
            400,
            f"{len(run_input.tools or [])} client-declared tools; this endpoint takes at "
            f"most {limits.max_tools}",
        )
    return run_input


def client_tools(run_input: RunAgentInput, limits: InputLimits) -> list[ClientTool]:
    """The input's frontend tools as the run's client tools, each checked
    (`ClientTool`: a plain ASCII name, a bounded object schema, a bounded description).

    Raises:
        InputRefused: a tool that is not a valid client tool, or two named alike (case
            aside) (400), naming the tool.
    """
    declared: list[ClientTool] = []
    seen: set[str] = set()
    for index, tool in enumerate(run_input.tools or []):
        try:
            found = ClientTool(
                name=tool.name,
                description=tool.description,
                parameters=(
                    tool.parameters
                    if tool.parameters is not None
                    else {"type": "object", "properties": {}}
                ),
                timeout_seconds=limits.client_tool_timeout,
            )
        except ValidationError as error:
            first = error.errors(include_url=False, include_input=False)[0]
            where = ".".join(map(str, first["loc"])) or "tool"
            raise InputRefused(
                400, f"tools[{index}] is not a tool this endpoint takes: {where}: {first['msg']}"
            ) from None
        key = client_tool_key(found.name)
        if key in seen:
            raise InputRefused(400, f"two tools are named {found.name!r} (case aside)")
        seen.add(key)
        declared.append(found)
    return declared


@dataclass(frozen=True)
class ToolResult:
    """A frontend tool's result the input delivers (a trailing `tool` message)."""

    message_id: str
    call_id: str
    output: str
    error: str | None


def tool_results(run_input: RunAgentInput) -> list[ToolResult]:
    """The results the input delivers: the `tool` messages at its end (after the last
    message of another role). Earlier ones are history the client sends again, not news.

    Raises:
        InputRefused: a result that is not text, larger than a callback result may be,
            not valid Unicode, or naming a call id no run gives (400 / 413).
    """
    trailing: list[ToolMessage] = []
    for message in reversed(run_input.messages):
        if not isinstance(message, ToolMessage):
            break
        trailing.append(message)
    results = []
    for message in reversed(trailing):
        call_id = message.tool_call_id
        if not 1 <= len(call_id) <= MAX_CALL_ID_CHARS:
            raise InputRefused(
                400, f"tool message {message.id}: toolCallId is 1 to {MAX_CALL_ID_CHARS} characters"
            )
        if not isinstance(message.content, str):
            raise InputRefused(400, f"tool message {message.id}: only text content is taken")
        if len(message.content.encode("utf-8", "surrogatepass")) > MAX_CALLBACK_RESULT_BYTES:
            raise InputRefused(
                413, f"tool message {message.id}: over {MAX_CALLBACK_RESULT_BYTES:,} bytes"
            )
        error = message.error
        if error is not None and len(error) > MAX_CALLBACK_ERROR_CHARS:
            raise InputRefused(
                400,
                f"tool message {message.id}: an error of at most "
                f"{MAX_CALLBACK_ERROR_CHARS:,} characters",
            )
        results.append(
            ToolResult(
                message_id=message.id,
                call_id=_unicode(call_id, f"tool message {message.id}'s toolCallId"),
                output=_unicode(message.content, f"tool message {message.id}"),
                error=None
                if error is None
                else _unicode(error, f"tool message {message.id}'s error"),
            )
        )
    if len({r.call_id for r in results}) != len(results):
        raise InputRefused(400, "two tool messages answer the same call: send one per call")
    return results


def check_prefix(prefix: str) -> str:
    """A session prefix: 1 to 40 characters of a-z 0-9 and dashes.

    Raises:
        ValueError: anything else.
    """
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,39}", prefix):
        raise ValueError(f"a session prefix is 1 to 40 of a-z 0-9 -, got {prefix!r}")
    return prefix


def session_id(prefix: str, user: str, thread_id: str) -> str:
    """The session (workflow id) a user's thread is: `<prefix>-<owner>-<thread id>`.

    The owner part is a digest of the user's comparable name (`name_key`: case, width
    and invisible characters folded, as deciders are compared), so a thread id names a
    different session for every user: no other user can reach it, and two requests that
    race to start the same thread id for two users start two sessions.
    """
    owner = hashlib.sha256(name_key(user).encode()).hexdigest()[:16]
    return f"{prefix}-{owner}-{thread_id}"


def message_update_id(message_id: str) -> str:
    """The session message id (update id) an AG-UI user message is sent under: the same
    message sent again is not taken twice."""
    return f"agui-{message_id}"


def tool_result_update_id(message_id: str) -> str:
    """The update id a frontend tool's result (an AG-UI tool message) is delivered under:
    the same message sent again is delivered once."""
    return f"agui-tool-{message_id}"


def user_text(message: UserMessage) -> str:
    """The text of a user message (its text parts joined; media parts are refused).

    Raises:
        InputRefused: a media part, or no text, or text over the session's limit, or
            text that is not valid Unicode.
    """
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        if not all(isinstance(part, TextPart) for part in content):
            raise InputRefused(400, "only text parts are taken in a user message")
        text = "\n".join(part.text for part in content if isinstance(part, TextPart))
    if not text.strip():
        raise InputRefused(400, "the last user message has no text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InputRefused(
            413, f"the message has {len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}"
        )
    return _unicode(text, "the last user message")


def interrupt_id(call_id: str, arguments_hash: str) -> str:
    """The interrupt id an approval is shown under: it names the call and the exact
    arguments (their hash), so a resume of it can only decide what was shown."""
    return f"{_APPROVAL_PREFIX}{call_id}:{arguments_hash}"


def authorization_interrupt_id(call_id: str) -> str:
    """The interrupt id an OAuth authorization a call waits for is shown under."""
    return f"{_AUTHORIZATION_PREFIX}{call_id}"


@dataclass(frozen=True)
class AuthorizationRef:
    """What a resume entry of an authorization interrupt says: the user authorized (the
    run goes on once the provider's callback came), or declined (the wait ends)."""

    call_id: str
    declined: bool


@dataclass(frozen=True)
class ApprovalRef:
    """What a resume entry decides."""

    call_id: str
    arguments_hash: str
    approve: bool
    reason: str | None


def approval_ref(entry: ResumeEntry) -> ApprovalRef:
    """The decision a resume entry carries.

    `status: "resolved"` with `payload: {"approved": true|false, "reason"?: str}` decides;
    `status: "cancelled"` denies. A payload's `argumentsHash`, when given, must be the
    interrupt's.

    Raises:
        InputRefused: an interrupt id that names no approval, or a payload that says
            neither yes nor no, or a hash that is not the interrupt's, or a reason that
            is not a text of at most `MAX_REASON_CHARS` valid Unicode characters (all 400).
    """
    ident = entry.interrupt_id
    if not isinstance(ident, str) or not ident.startswith(_APPROVAL_PREFIX):
        raise InputRefused(
            400, "unknown interrupt: this endpoint's interrupts are approvals and authorizations"
        )
    call_id, _, digest = ident[len(_APPROVAL_PREFIX) :].rpartition(":")
    if not call_id or len(call_id) > MAX_CALL_ID_CHARS or not _HASH.fullmatch(digest):
        raise InputRefused(400, "unknown interrupt: not an id this endpoint gave")
    payload: Any = entry.payload
    reason = None
    if entry.status == "cancelled":
        approve = False
    else:
        if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
            raise InputRefused(
                400,
                'a resolved approval carries payload {"approved": true} or {"approved": false}',
            )
        approve = payload["approved"]
    if isinstance(payload, dict):
        given = payload.get("argumentsHash")
        if given is not None and given != digest:
            raise InputRefused(
                400,
                f"arguments hash mismatch for call {call_id}: the resume names other "
                "arguments than the interrupt it answers; nothing was decided",
            )
        given_reason = payload.get("reason")
        if given_reason is not None:
            if not isinstance(given_reason, str) or len(given_reason) > MAX_REASON_CHARS:
                raise InputRefused(
                    400, f"a reason is a text of at most {MAX_REASON_CHARS:,} characters"
                )
            reason = _unicode(given_reason, "the reason")
    return ApprovalRef(call_id, digest, approve, reason)


def authorization_ref(entry: ResumeEntry) -> AuthorizationRef:
    """What a resume entry of an authorization interrupt says: `status: "resolved"`
    (the user went through the link; any payload is ignored) or `"cancelled"` (declined).

    Raises:
        InputRefused: an interrupt id that names no call (400).
    """
    call_id = entry.interrupt_id[len(_AUTHORIZATION_PREFIX) :]
    if not call_id or len(call_id) > MAX_CALL_ID_CHARS:
        raise InputRefused(400, "unknown interrupt: not an id this endpoint gave")
    return AuthorizationRef(call_id, declined=entry.status == "cancelled")


def resume_refs(entries: list[ResumeEntry]) -> list[ApprovalRef | AuthorizationRef]:
    """What all resume entries say, each checked before any is acted on: a resume is
    taken whole or not at all.

    Raises:
        InputRefused: an entry `approval_ref` or `authorization_ref` refuses, or two
            entries for one call (400).
    """
    refs: list[ApprovalRef | AuthorizationRef] = [
        authorization_ref(entry)
        if isinstance(entry.interrupt_id, str)
        and entry.interrupt_id.startswith(_AUTHORIZATION_PREFIX)
        else approval_ref(entry)
        for entry in entries
    ]
    calls = [ref.call_id for ref in refs]
    if len(set(calls)) != len(calls):
        raise InputRefused(400, "two resume entries decide the same call: send one per call")
    return refs
