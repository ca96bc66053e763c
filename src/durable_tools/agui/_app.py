"""The AG-UI endpoint as a Starlette app: `POST /` a `RunAgentInput`, read the run's events
as server-sent events.

Who is asking comes first (a Bearer token of the inbox's tokens file, a trusted proxy's
user header, or the host application's own `authenticate` hook); then the body, bounded
before it is read and checked as `_input` says; then the AG-UI run. Problems with the
request are HTTP errors (401, 403, 404, 400, 413, 415, 422) with a JSON body saying what
was wrong; problems of the run once it started (a refused message, a decision the run did
not take) are its `RUN_ERROR` event.

A thread is a session of the user's (`_input.session_id`): the first message starts it
(update-with-start), each next one is sent to it, and a resume entry decides an approval
through `AgentRun.decide_request`, the one decide path.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ag_ui.core import AssistantMessage, BaseEvent, RunAgentInput, RunStartedEvent, UserMessage
from ag_ui.encoder import EventEncoder
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, HTTPConnection, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import UpdateWorkflowExecutionLifecycleStage
from temporalio.api.update.v1 import UpdateRef, WaitPolicy
from temporalio.api.workflowservice.v1 import PollWorkflowExecutionUpdateRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_tools._activities._client_tools import client_tool_clash
from durable_tools._callers._auth import AuthConfig, authenticate
from durable_tools._callers._body import body_limit
from durable_tools._callers._tokens import User, valid_user
from durable_tools.agui._input import (
    ApprovalRef,
    AuthorizationRef,
    InputLimits,
    InputRefused,
    ToolResult,
    check_prefix,
    checked_thread_id,
    client_tools,
    message_update_id,
    parse_input,
    resume_refs,
    session_id,
    tool_result_update_id,
    tool_results,
    user_text,
)
from durable_tools.agui._turn import CLEANUP_SECONDS, TurnView, follow_turn, open_calls, run_error
from durable_tools.callbacks import (
    CALLBACK_ALREADY_ANSWERED,
    CallbackRejected,
    PendingCallback,
    answer_callback,
)
from durable_tools.client import (
    AgentRun,
    AlreadyDecided,
    DecisionError,
    DurableTools,
    SentMessage,
    SessionRefused,
)
from durable_tools.messages import Message
from durable_tools.oauth._broker import AUTHORIZATION_SIGNAL
from durable_tools.protocol._client_tools import ClientTool
from durable_tools.protocol._deciders import name_key, person_of
from durable_tools.protocol._wait_types import AuthorizationCompleted
from durable_tools.tools import ToolRegistry
from durable_tools.tools._context import Identity
from durable_tools.workflows import AgentConfig, RunSnapshot, ToolCallRecord
from durable_tools.workflows.loop._embed import AGENT_WORKFLOW

__all__ = ["DEFAULT_AGUI_BODY_BYTES", "KEEPALIVE", "AguiConfig", "Authenticate", "create_agui_app"]

logger = logging.getLogger(__name__)

DEFAULT_AGUI_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body taken: AG-UI clients send the whole thread with every message."""

KEEPALIVE = ": keep-alive\n\n"
"""The SSE comment a quiet stream sends (clients ignore comment lines)."""

Authenticate = Callable[[Request], "User | str | Awaitable[User | str | None] | None"]
"""The host application's hook: the user a request comes from (a `User` or a name), or
None for nobody."""


@dataclass(frozen=True)
class AguiConfig:
    """How the endpoint runs threads and whom it serves.

    Args:
        agent: The configuration of the sessions it starts (a thread's first message
            starts one; later messages go to it whatever this says then).
        auth: Bearer tokens (the inbox's tokens file) and trusted proxies; or
        authenticate: the host application's own hook (wins over `auth`). One of the
            two is required: nothing is served to nobody.
        session_prefix: Sessions are `<prefix>-<owner digest>-<thread id>`.
        max_body_bytes: Largest request body.
        limits: Bounds on messages and resume entries.
        stream_tokens: Start sessions with `stream_tokens=True` (the answer's text
            streams as the model writes it).
        poll_interval: Seconds between looks at a run's events and status.
        keepalive_seconds: Quiet seconds after which the stream sends an SSE comment.
        max_threads_per_user: Most threads (running sessions) one user may have; a
            message that would start one more is refused with 429. None: no cap. Counted
            through Temporal's visibility, which lags a moment behind starts, so a burst
            of new threads may pass it by a few.
        registry: The workers' tools: a frontend tool named like one of them (case
            aside) is refused with a 400 before the thread starts. Without it the worker
            leaves such a tool out of the run (its own tool stands), unnoticed by the
            front end.
    """

    agent: AgentConfig
    auth: AuthConfig | None = None
    authenticate: Authenticate | None = None
    session_prefix: str = "agui"
    max_body_bytes: int = DEFAULT_AGUI_BODY_BYTES
    limits: InputLimits = field(default_factory=InputLimits)
    stream_tokens: bool = True
    poll_interval: float = 0.25
    keepalive_seconds: float = 15.0
    max_threads_per_user: int | None = 1_000
    registry: ToolRegistry | None = None

    def __post_init__(self) -> None:
        if self.auth is None and self.authenticate is None:
            raise ValueError("the AG-UI endpoint needs `auth` (tokens) or an `authenticate` hook")
        if self.max_threads_per_user is not None and self.max_threads_per_user < 1:
            raise ValueError("max_threads_per_user is at least 1 (or None: no cap)")
        check_prefix(self.session_prefix)


def _refused(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _user_of(request: Request, config: AguiConfig) -> User | None:
    """The authenticated user, or None (a name the hook gives must be a valid user name:
    letters, digits and `._@+-`, so look-alike characters cannot name someone else)."""
    if config.authenticate is not None:
        found = config.authenticate(request)
        if inspect.isawaitable(found):
            found = await found
        if isinstance(found, str):
            found = User(found, via="hook")
        if found is None:
            return None
        if not isinstance(found, User) or not valid_user(found.name):
            raise InputRefused(403, "the authenticated user's name is not a valid user name")
        return found
    assert config.auth is not None
    # Without the host app's login session, if it has one: a cookie would let another
    # site's page speak for a signed-in browser; a token or a proxy's header cannot.
    cookieless = HTTPConnection({k: v for k, v in request.scope.items() if k != "session"})
    return authenticate(cookieless, config.auth)


def thread_messages(conversation: list[Message]) -> list[dict[str, Any]]:
    """A session's conversation as AG-UI messages: what the user said and the answers'
    text (tool calls and their results stay in the run; the events showed them)."""
    shown: list[dict[str, Any]] = []
    for index, message in enumerate(conversation):
        if not message.content:
            continue
        ident = f"m-{index}"
        if message.role == "user":
            shown.append(UserMessage(id=ident, content=message.content).model_dump(by_alias=True))
        elif message.role == "assistant":
            answer = AssistantMessage(id=ident, content=message.content)
            shown.append(answer.model_dump(by_alias=True))
    return shown


REJOIN_HEADER = "last-event-id"
"""The header a reconnecting client may send its last event's id in (as an `EventSource`
does); `forwardedProps.lastEventId` says the same in the body, and wins."""


def rejoin_cursor(request: Request, run_input: RunAgentInput) -> str | None:
    """The event id a reconnecting client says it had last (`forwardedProps.lastEventId`
    or the `Last-Event-ID` header), or None.

    Raises:
        InputRefused: one that is not a cursor this endpoint gives (400).
    """
    forwarded = run_input.forwarded_props
    cursor = forwarded.get("lastEventId") if isinstance(forwarded, dict) else None
    if cursor is None:
        cursor = request.headers.get(REJOIN_HEADER)
    if cursor is None:
        return None
    try:
        if not isinstance(cursor, str):
            raise ValueError("not a text")
        TurnView.rejoined(cursor, frozenset())  # checked whole here: a 400, not a RUN_ERROR
    except ValueError:
        raise InputRefused(400, "lastEventId is not an event id this endpoint gave") from None
    return cursor


def _last_user_message(run_input: RunAgentInput) -> UserMessage:
    for message in reversed(run_input.messages):
        if isinstance(message, UserMessage):
            return message
    raise InputRefused(400, "the input has no user message to send")


def create_agui_app(tools: DurableTools | Client, config: AguiConfig) -> Starlette:
    """The AG-UI endpoint: mount it in a Starlette or FastAPI app (`Mount("/agui", app)`),
    or serve it with `durable-tools serve --agui`.

    `POST /` takes a `RunAgentInput` and streams the AG-UI run; `GET /threads/{id}` gives
    the user's thread so far as AG-UI messages (a reloaded page shows it again).

    Serve it with forwarding headers off when `auth` trusts a proxy (the trusted-proxy
    check must see the socket's peer): `InboxServer` does, `uvicorn --no-proxy-headers`
    otherwise.

    Args:
        tools: Where sessions are started (its task queue) and reached.
        config: The sessions' agent, authentication and limits.
    """
    durable = tools if isinstance(tools, DurableTools) else DurableTools(tools)
    agent = config.agent
    if config.stream_tokens and not agent.stream_tokens:
        agent = agent.model_copy(update={"stream_tokens": True})
    encoder = EventEncoder()

    async def run_endpoint(request: Request) -> Response:
        try:
            user = await _user_of(request, config)
        except InputRefused as refused:
            return _refused(refused.status, refused.message)
        if user is None:
            return _refused(401, "authentication required: Authorization: Bearer <token>")
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            # Also keeps cross-site forms out: a browser sends JSON only after a CORS
            # preflight this endpoint does not answer.
            return _refused(415, "send the RunAgentInput as application/json")
        try:
            body = await request.body()
        except ClientDisconnect:
            return Response(status_code=400)
        try:
            run_input = parse_input(body, config.limits)
            session = session_id(config.session_prefix, user.name, run_input.thread_id)
            # A resume needs its message too (the one it answers is followed), checked
            # here: nothing is decided for an input the run could not follow.
            message = _last_user_message(run_input)
            declared = client_tools(run_input, config.limits)
            server_tools = (
                [spec.name for spec in config.registry.specs()] if config.registry else []
            )
            clash = client_tool_clash(declared, server_tools)
            if clash is not None:
                raise InputRefused(400, f"{clash}: rename it")
            # With a resume, trailing tool messages are history (a server tool's result
            # the client appended); without one, they are results the front end sends.
            results = [] if run_input.resume else tool_results(run_input)
            answers = bool(run_input.resume or results)
            text = None if answers else user_text(message)
            if answers and not await _exists(durable, session):
                raise InputRefused(404, f"no thread {run_input.thread_id!r} of yours")
            if not answers and config.max_threads_per_user is not None:
                await _check_thread_cap(durable, config, user, session)
            rejoin = rejoin_cursor(request, run_input) if text is not None else None
        except InputRefused as refused:
            return _refused(refused.status, refused.message)
        asked = _Asked(run_input, message, text, tuple(declared), tuple(results), rejoin)
        events = _events(durable, agent, config, user, asked, session)
        return StreamingResponse(
            _encoded(events, encoder, config.keepalive_seconds),
            media_type=encoder.get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def thread_endpoint(request: Request) -> Response:
        try:
            user = await _user_of(request, config)
            if user is None:
                return _refused(401, "authentication required: Authorization: Bearer <token>")
            thread_id = checked_thread_id(str(request.path_params["thread_id"]))
            session = session_id(config.session_prefix, user.name, thread_id)
            if not await _exists(durable, session):
                raise InputRefused(404, f"no thread {thread_id!r} of yours")
        except InputRefused as refused:
            return _refused(refused.status, refused.message)
        said = await durable.run(session).conversation()
        return JSONResponse({"threadId": thread_id, "messages": thread_messages(said)})

    app = Starlette(
        routes=[
            Route("/", run_endpoint, methods=["POST"]),
            Route("/threads/{thread_id}", thread_endpoint, methods=["GET"]),
        ],
        middleware=body_limit(config.max_body_bytes),
    )
    return app


async def _check_thread_cap(
    tools: DurableTools, config: AguiConfig, user: User, session: str
) -> None:
    """Refuse a message that would start a thread past the user's cap.

    Raises:
        InputRefused: the user has `max_threads_per_user` running threads already (429).
    """
    cap = config.max_threads_per_user
    if cap is None:
        return
    # The owner part of the session id is the user's: every running agent workflow under
    # it is one of their threads or its sub-agents (not the token streams beside them).
    # The prefix is checked and the digest hex: no quote can end the literal.
    owner = session_id(config.session_prefix, user.name, "")
    query = (
        f"WorkflowId STARTS_WITH '{owner}' AND WorkflowType = '{AGENT_WORKFLOW}' "
        "AND ExecutionStatus = 'Running'"
    )
    running = (await tools.client.count_workflows(query)).count
    # One look in the common case (far from the cap); at it, a message to a thread the
    # user has open goes on.
    if running >= cap and not await _exists(tools, session):
        raise InputRefused(
            429,
            f"you have {running:,} threads open; the limit is {cap:,}: continue one of them",
        )


async def _exists(tools: DurableTools, session: str) -> bool:
    try:
        await tools.client.get_workflow_handle(session).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def _encoded(
    events: AsyncIterator[tuple[BaseEvent, str | None]], encoder: EventEncoder, keepalive: float
) -> AsyncIterator[str]:
    """The events as SSE text, each with its rejoin cursor as the SSE event id when it
    has one, and a comment line after `keepalive` quiet seconds: an AG-UI run waiting
    for someone else's approval may be quiet for long, and proxies close connections
    that look idle."""
    iterator = aiter(events)
    pending: asyncio.Future[tuple[BaseEvent, str | None]] = asyncio.ensure_future(anext(iterator))
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=keepalive)
            if not done:
                yield KEEPALIVE
                continue
            try:
                event, cursor = pending.result()
            except StopAsyncIteration:
                return
            yield (f"id: {cursor}\n" if cursor else "") + encoder.encode(event)
            pending = asyncio.ensure_future(anext(iterator))
    finally:
        pending.cancel()
        await asyncio.wait({pending}, timeout=CLEANUP_SECONDS)


@dataclass(frozen=True)
class _Asked:
    """What one request asks, checked: its input, the user message it sends or follows,
    that message's text (None when the request answers: a resume, tool results), the
    frontend tools it declares and the tool results it delivers."""

    run_input: RunAgentInput
    message: UserMessage
    text: str | None
    declared: tuple[ClientTool, ...]
    results: tuple[ToolResult, ...]
    rejoin: str | None = None
    """The event id of the last event a reconnecting client has (its rejoin cursor)."""


async def _events(
    tools: DurableTools,
    agent: AgentConfig,
    config: AguiConfig,
    user: User,
    asked: _Asked,
    session: str,
) -> AsyncIterator[tuple[BaseEvent, str | None]]:
    """One AG-UI run: `RUN_STARTED`, then the message sent (or the resume decided) and
    its turns followed, then `RUN_FINISHED` or `RUN_ERROR` (always one of the two: an
    unexpected failure is a `RUN_ERROR` too). Each event comes with its rejoin cursor
    (what the client has seen once it has this event), or None."""
    run_input = asked.run_input
    thread_id, run_id = run_input.thread_id, run_input.run_id
    run = tools.run(session)
    # Sending the message (or deciding the resume) is not the request's to cancel: once
    # started it completes, even when the client goes away, so a message is never half
    # sent. It starts before the first event, so a client that saw RUN_STARTED knows its
    # message reached the session (or will get the refusal when it asks again).
    work = asyncio.create_task(_take(tools, agent, run, user, asked))
    _unfinished.add(work)
    work.add_done_callback(_unfinished.discard)
    yield RunStartedEvent(thread_id=thread_id, run_id=run_id), None
    try:
        taken = await asyncio.shield(work)
        if isinstance(taken, BaseEvent):
            yield taken, None
            return
        sent, view, cursor, unsent = taken
        async for event in follow_turn(
            run,
            sent,
            view,
            user=user,
            thread_id=thread_id,
            run_id=run_id,
            cursor=cursor,
            streams=agent.stream_tokens,
            poll_interval=config.poll_interval,
            unsent=unsent,
        ):
            yield event, view.cursor()
    except Exception as error:  # the stream ends with its end event, whatever failed
        yield _failed(error, session), None


def _failed(error: Exception, session: str) -> BaseEvent:
    """The `RUN_ERROR` of an unexpected failure: its kind only (an exception's text may
    quote what the client must not see); the details go to the server's log."""
    logger.warning("AG-UI run of session %s failed", session, exc_info=error)
    return run_error(
        f"the endpoint failed ({type(error).__name__}); the server's log has the details",
        "INTERNAL_ERROR",
    )


_unfinished: set[asyncio.Task[Any]] = set()
"""Sends and decisions whose request went away: kept referenced until they complete."""

_FOLLOWED_LOOKBACK = 8
"""User messages, from the input's last, looked up for the one a resume answers."""

Taken = tuple[SentMessage, TurnView, int, tuple[str, ...]]
"""A message sent or resumed: the message to follow, the view to follow it with, the event
cursor to start at, and the ids of the input's newer user messages not sent."""


async def _take(
    tools: DurableTools, agent: AgentConfig, run: AgentRun, user: User, asked: _Asked
) -> Taken | BaseEvent:
    """Send the message (update-with-start), decide the resume entries or deliver the
    tool results: what to follow, or the `RUN_ERROR` saying why nothing (or, past the
    checks, not all) was taken."""
    run_input = asked.run_input
    names = frozenset(tool.name for tool in asked.declared)
    try:
        if run_input.resume:
            return await _resume(tools, run, run_input, user, names)
        if asked.results:
            return await _deliver(tools, run, run_input, asked.results, names)
        assert asked.text is not None
        identity = Identity(user=user.name, session=run_input.thread_id)
        if asked.declared:
            # A thread's first message starts its session: the tools it declares are the
            # session's (later messages go to it whatever they declare).
            agent = agent.model_copy(update={"client_tools": list(asked.declared)})
        ident = message_update_id(asked.message.id)
        return await _send(tools, run, agent, identity, ident, asked.text, names, asked.rejoin)
    except SessionRefused as refused:
        return run_error(str(refused), "MESSAGE_REFUSED")
    except InputRefused as refused:
        return run_error(refused.message, "INVALID_INPUT")
    except Exception as error:  # kept here too: nobody may await a request gone away
        return _failed(error, run.run_id)


async def _send(
    tools: DurableTools,
    run: AgentRun,
    agent: AgentConfig,
    identity: Identity,
    ident: str,
    text: str,
    client_tools: frozenset[str],
    rejoin: str | None = None,
) -> Taken:
    """Send the message; follow it from the session's turn now.

    The same message sent again while the session answers it (a client reconnecting) is
    not sent twice (its update id is taken once) and starts in the middle of its turn:
    the open calls of that turn are this AG-UI run's to show the results of.
    """
    view, cursor = TurnView(0, client_tools=client_tools), 0
    if await _exists(tools, run.run_id):
        snapshot = await run.status()
        cursor = (await run.events_since(0)).total
        answering = snapshot.session is not None and snapshot.session.answering is not None
        expected = open_calls(await run.timeline(), snapshot.turn) if answering else set()
        view = TurnView(snapshot.turn, expected=expected, client_tools=client_tools)
        if rejoin is not None and await _taken(tools, run.run_id, ident):
            # A client coming back to this message's AG-UI run: from what it has. (For a
            # message the session has not taken, the cursor is another message's: the
            # new message is followed from its start.)
            view, cursor = TurnView.rejoined(rejoin, client_tools), 0
    sent = await tools.start_send(
        run.run_id,
        text,
        config=agent,
        message_id=ident,
        identity=identity,
    )
    return sent, view, cursor, ()


async def _resume(
    tools: DurableTools,
    run: AgentRun,
    run_input: RunAgentInput,
    user: User,
    client_tools: frozenset[str],
) -> Taken | BaseEvent:
    """Decide the resume entries and follow the message they belong to.

    Everything is checked before anything is decided: every entry, and the message to
    follow (the newest user message of the input the session took; newer ones were
    never sent, and the result names them). A refused input decides nothing.
    """
    try:
        refs = resume_refs(run_input.resume or [])
    except InputRefused as refused:
        return run_error(refused.message, "INVALID_RESUME")
    found = await _answered_message(tools, run, run_input, "resume", "nothing was decided")
    if isinstance(found, BaseEvent):
        return found
    message, unsent, snapshot, cursor, timeline = found
    open_now = open_calls(timeline, snapshot.turn)
    authorizations = [ref for ref in refs if isinstance(ref, AuthorizationRef)]
    waiting = {auth.call_id for auth in snapshot.pending_authorizations}
    made = {record.call_id for record in timeline}
    for ref in authorizations:
        if ref.call_id not in waiting and ref.call_id not in made:
            return run_error(
                f"no authorization for call {ref.call_id} in this thread; nothing was decided",
                "NothingPending",
            )
    decided = await _decide(run, [ref for ref in refs if isinstance(ref, ApprovalRef)], user)
    if isinstance(decided, BaseEvent):
        return decided
    for ref in authorizations:
        # Authorizing happens at the provider, whose callback resumes the call; the
        # resume only says the user is back. Declining ends the wait, as a refused
        # authorization at the provider would (a wait already over ignores it).
        if ref.declined and ref.call_id in waiting:
            declined = AuthorizationCompleted(
                call_id=ref.call_id, error="the user declined the authorization in the chat"
            )
            await run.handle.signal(run.prefix + AUTHORIZATION_SIGNAL, declined)
    # The calls the resume answers show their results in this AG-UI run, whenever
    # they came (an authorized call may have run before the resume arrived).
    answered = decided | {ref.call_id for ref in authorizations}
    view = TurnView(snapshot.turn, expected=answered | open_now, client_tools=client_tools)
    return run.message(message_update_id(message.id)), view, cursor, unsent


async def _answered_message(
    tools: DurableTools, run: AgentRun, run_input: RunAgentInput, what: str, consequence: str
) -> tuple[UserMessage, tuple[str, ...], RunSnapshot, int, list[ToolCallRecord]] | BaseEvent:
    """What an input that answers the run (a resume, tool results) acts on: the message
    it follows and the ids of newer ones not sent, the run's status, event count and
    timeline now; or the `RUN_ERROR` saying the input holds no message the session took
    (`what` the input is, `consequence` what was not done)."""
    followed = await _followed_message(tools, run, run_input)
    if followed is None:
        return run_error(
            f"the {what}'s messages hold none this thread's session took: send the "
            f"thread's messages with the {what}; {consequence}",
            "INVALID_INPUT",
        )
    message, unsent = followed
    snapshot = await run.status()
    cursor = (await run.events_since(0)).total
    return message, unsent, snapshot, cursor, await run.timeline()


async def _deliver(
    tools: DurableTools,
    run: AgentRun,
    run_input: RunAgentInput,
    results: tuple[ToolResult, ...],
    client_tools: frozenset[str],
) -> Taken | BaseEvent:
    """Deliver the front end's tool results to the calls waiting for them, and follow the
    message they belong to.

    Everything is checked before anything is delivered: each result must answer a call
    of this thread's session; a call published for the front end and waiting is
    answered (under an update id made of the tool message's id: the same message sent
    again is delivered once); a result of a server tool's call is history the client
    sent again, skipped; anything else (a call the session never made, another
    callback's call, a second result for an answered call) is a `RUN_ERROR` and nothing
    is delivered.
    """
    found = await _answered_message(tools, run, run_input, "tool result", "nothing was delivered")
    if isinstance(found, BaseEvent):
        return found
    message, unsent, snapshot, cursor, timeline = found
    waiting = {pending.call_id: pending for pending in snapshot.pending_callbacks}
    made = {record.call_id: record for record in timeline}
    known = client_tools | {p.tool for p in snapshot.pending_callbacks if p.client}
    sends: list[tuple[ToolResult, PendingCallback | None]] = []
    for result in results:
        pending = waiting.get(result.call_id)
        record = made.get(result.call_id)
        if pending is not None and not pending.client:
            return run_error(
                f"call {result.call_id} is not a call of a tool your app declared: its "
                "result is not yours to send; nothing was delivered",
                "FOREIGN_TOOL_CALL",
            )
        if pending is None and record is None:
            return run_error(
                f"no call {result.call_id} in this thread: its result answers nothing; "
                "nothing was delivered",
                "UNKNOWN_TOOL_CALL",
            )
        if pending is None and record is not None and record.tool not in known:
            continue  # a server tool's result, which the client keeps in its history
        sends.append((result, pending))
    delivered: set[str] = set()
    for result, pending in sends:
        refused = await _answer(run, result, pending)
        if refused is not None:
            return refused
        delivered.add(result.call_id)
    open_now = open_calls(await run.timeline(), snapshot.turn)
    view = TurnView(
        snapshot.turn,
        expected=open_now - delivered,
        client_tools=known,
        answered=delivered,
    )
    return run.message(message_update_id(message.id)), view, cursor, unsent


async def _answer(
    run: AgentRun,
    result: ToolResult,
    pending: PendingCallback | None,
) -> BaseEvent | None:
    """Send one tool result through the callback path; None when the run took it (now,
    or before under the same tool message id), else the `RUN_ERROR` saying why not.

    A call no longer waiting is answered again under the same update id: Temporal gives
    the first delivery's reply for a replayed message, and the run's refusal for a new
    message answering a call answered already.
    """
    if pending is None:
        # Not waiting any more: only its replay can be taken. The hash is not known
        # now, and is not checked for an update Temporal already has.
        pending = PendingCallback(
            call_id=result.call_id,
            tool="",
            arguments={},
            request_hash="0" * 64,
            idempotency_key="",
            published_at=datetime.now(UTC),
            deadline=datetime.now(UTC),
        )
    try:
        await answer_callback(
            run.handle,
            pending,
            output=result.output if result.error is None else None,
            error=result.error,
            prefix=run.prefix,
            update_id=tool_result_update_id(result.message_id),
        )
    except CallbackRejected as rejected:
        if rejected.kind == CALLBACK_ALREADY_ANSWERED:
            return run_error(
                f"call {result.call_id} was answered already (by another tool message "
                f"than {result.message_id}); the first result stands",
                "TOOL_CALL_ANSWERED",
            )
        return run_error(
            f"the result of call {result.call_id} was refused: {rejected}", rejected.kind
        )
    return None


async def _followed_message(
    tools: DurableTools, run: AgentRun, run_input: RunAgentInput
) -> tuple[UserMessage, tuple[str, ...]] | None:
    """The newest user message of the input the session's run took (of the last
    `_FOLLOWED_LOOKBACK`), and the ids of the newer ones; None when it took none."""
    users = [m for m in run_input.messages if isinstance(m, UserMessage)]
    for back, message in enumerate(reversed(users[-_FOLLOWED_LOOKBACK:])):
        if await _taken(tools, run.run_id, message_update_id(message.id)):
            return message, tuple(m.id for m in users[len(users) - back :])
    return None


async def _taken(tools: DurableTools, session: str, update_id: str) -> bool:
    """Whether the session's current run took the message `update_id` (accepted it,
    answered or not), without waiting for its answer."""
    client = tools.client
    request = PollWorkflowExecutionUpdateRequest(
        namespace=client.namespace,
        update_ref=UpdateRef(
            workflow_execution=WorkflowExecution(workflow_id=session), update_id=update_id
        ),
        identity=client.identity,
        wait_policy=WaitPolicy(
            lifecycle_stage=UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED
        ),
    )
    try:
        await client.workflow_service.poll_workflow_execution_update(
            request, retry=True, timeout=timedelta(seconds=_TAKEN_TIMEOUT)
        )
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


_TAKEN_TIMEOUT = 10.0
"""Seconds a look at whether a message was taken may take."""


async def _decide(run: AgentRun, refs: list[ApprovalRef], user: User) -> set[str] | BaseEvent:
    """Decide each (checked) resume entry through the one decide path: the decided calls
    (their results are this run's to show), or the `RUN_ERROR` of the first entry not
    decided.

    A resume sent again (the same person's same verdict, already recorded) is taken as
    decided: nothing is sent to the run twice.
    """
    decided: set[str] = set()
    for ref in refs:
        try:
            await run.decide_request(
                ref.call_id,
                ref.approve,
                arguments_hash=ref.arguments_hash,
                decider=user.name,
                groups=user.groups,
                reason=ref.reason,
            )
        except AlreadyDecided as already:
            same = person_of(already.decided_by) == name_key(user.name)
            if not (same and already.approved == ref.approve):
                return run_error(already.message, type(already).__name__)
        except DecisionError as error:
            return run_error(error.message, type(error).__name__)
        decided.add(ref.call_id)
    return decided
