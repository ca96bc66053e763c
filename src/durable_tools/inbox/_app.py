"""The inbox as a Starlette app: pages, the JSON API, login, and the OAuth callback."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from durable_tools._callers._auth import (
    SESSION_ID,
    SESSION_ISSUED,
    SESSION_TOKEN,
    AuthConfig,
    authenticate,
    decider_for,
)
from durable_tools._callers._body import body_limit
from durable_tools._callers._sessions import SESSION_AGE
from durable_tools._callers._tokens import User, hash_token
from durable_tools._encrypted import PayloadsEncrypted
from durable_tools.client import DurableTools
from durable_tools.oauth import CallbackApp
from durable_tools.tools import ToolRegistry

from ._api import BodyRefused, decision_body, pending_json
from ._csrf import CSRF_FIELD, CSRF_HEADER, csrf_token, valid_csrf
from ._data import find_call, load_run, what_server_shows
from ._decide import DecisionRefused, decide, reissue
from ._errors import NotAuthenticated, error_handlers
from ._pending import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_QUERY_CONCURRENCY,
    PendingList,
    RunQueries,
    list_pending,
)
from ._run_record import RunRecords
from ._tools import ToolsPage, load_run_tools, page_bounds, registry_tools, tools_json
from ._web import (
    HERE,
    IdSegments,
    SecurityHeaders,
    callback_route,
    id_param,
    make_templates,
    safe_next,
)

__all__ = ["DEFAULT_MAX_BODY_BYTES", "InboxConfig", "create_app"]

_SESSION_COOKIE = "durable_tools_inbox"
DEFAULT_MAX_BODY_BYTES = 64 * 1024
"""Largest request body the inbox reads (its forms and decisions are a few hundred bytes)."""


@dataclass
class InboxConfig:
    """How the inbox runs.

    Args:
        auth: Tokens file and trusted proxies.
        session_secret: Signs the session cookie; a random one (sessions end when the
            process does) when empty.
        registry: The tools, for their descriptions and safety classes on the call page
            when a run's own recorded catalog cannot be read (it is read first).
        ui_base: The Temporal UI's base URL for run links (default `TEMPORAL_UI_URL`, else
            the UI the embedded server at the client's address recorded).
        refresh_seconds: How often the pending page refreshes itself.
        secure_cookies: Send the session cookie over HTTPS only (set behind TLS).
        oauth: The OAuth callback endpoint to host at its path, if any.
        page_size: Runs per page of the pending list (1 to 1000).
        query_concurrency: Run queries in flight at once, across all requests.
        max_body_bytes: Larger request bodies are refused (413) before they are read.
    """

    auth: AuthConfig
    session_secret: str = ""
    registry: ToolRegistry | None = None
    ui_base: str | None = None
    refresh_seconds: float = 5.0
    secure_cookies: bool = False
    oauth: CallbackApp | None = field(default=None)
    page_size: int = DEFAULT_PAGE_SIZE
    query_concurrency: int = DEFAULT_QUERY_CONCURRENCY
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


def create_app(tools: DurableTools, config: InboxConfig) -> Starlette:
    """The inbox app: serve it with uvicorn (`durable-tools serve` does), with forwarding
    headers off (`InboxServer` does; `uvicorn --no-proxy-headers` otherwise).

    Args:
        tools: The client that reads runs and sends decisions.
        config: Authentication, sessions and what else to show or host.

    Raises:
        ValueError: a page size outside 1..1000, or a query concurrency below 1.
    """
    templates = make_templates()
    auth = config.auth
    if not 1 <= config.page_size <= 1000:
        raise ValueError("page_size must be between 1 and 1000")
    queries = RunQueries(tools, config.query_concurrency)
    records = RunRecords(tools)

    def user_of(request: Request) -> User:
        user = authenticate(request, auth)
        if user is None:
            raise NotAuthenticated
        return user

    def render(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        context.setdefault("user", None)
        context["csrf"] = csrf_token(request)
        context["csrf_field"] = CSRF_FIELD
        return templates.TemplateResponse(request, name, context, status_code=status)

    def require_csrf(request: Request, user: User, submitted: object) -> None:
        # Bearer requests carry no cookie: a forged cross-site request cannot hold a token.
        if user.via != "token" and not valid_csrf(request, submitted):
            raise HTTPException(403, "missing or invalid CSRF token: reload the page")

    async def posted_call_form(request: Request) -> tuple[User, FormData, str, str]:
        """The user, the (CSRF-checked) form, the run id and the call id of a form post."""
        user = user_of(request)
        form = await request.form()
        require_csrf(request, user, form.get(CSRF_FIELD))
        return user, form, id_param(request, "run_id"), id_param(request, "call_id")

    def refused_page(
        request: Request, user: User, refused: DecisionRefused, run_id: str, call_id: str
    ) -> Response:
        return render(
            request,
            "refused.html",
            refused.status,
            user=user,
            message=refused.message,
            run_id=run_id,
            call_id=call_id,
        )

    # ------------------------------------------------------------------ login

    async def login_page(request: Request) -> Response:
        return render(request, "login.html", next=safe_next(request.query_params.get("next")))

    async def login(request: Request) -> Response:
        form = await request.form()
        if not valid_csrf(request, form.get(CSRF_FIELD)):
            raise HTTPException(403, "missing or invalid CSRF token: reload the page")
        token = form.get("token")
        found = auth.tokens.user_for(token) if isinstance(token, str) else None
        if found is None or not isinstance(token, str):
            return render(request, "login.html", 401, error="unknown token", next="/")
        request.session.clear()
        session_id, issued_at = auth.ended_sessions.begin()
        request.session.update(
            {SESSION_TOKEN: hash_token(token), SESSION_ID: session_id, SESSION_ISSUED: issued_at}
        )
        target = form.get("next")
        return RedirectResponse(safe_next(target if isinstance(target, str) else None), 303)

    async def logout(request: Request) -> Response:
        form = await request.form()
        if not valid_csrf(request, form.get(CSRF_FIELD)):
            raise HTTPException(403, "missing or invalid CSRF token: reload the page")
        # Ended on the server too: a copy of the cookie is refused from now on.
        auth.ended_sessions.end(
            request.session.get(SESSION_ID), request.session.get(SESSION_ISSUED)
        )
        request.session.clear()
        return RedirectResponse("/login", 303)

    # ------------------------------------------------------------------ pages

    def filters(request: Request) -> dict[str, str]:
        # Every filter the pending list takes, as given (clipped); empty when not given.
        params = request.query_params
        return {k: params.get(k, "")[:200] for k in ("agent", "tool", "decider", "run", "all")}

    async def pending_of(request: Request, user: User, chosen: dict[str, str]) -> PendingList:
        cursor = request.query_params.get("cursor") or None
        return await list_pending(
            tools,
            queries,
            user,
            agent=chosen["agent"] or None,
            tool=chosen["tool"] or None,
            decider=chosen["decider"] or None,
            run_id=chosen["run"] or None,
            everything=chosen["all"] in ("1", "true", "yes", "on"),
            page_size=config.page_size,
            cursor=cursor,
        )

    async def pending_page(request: Request) -> Response:
        user = user_of(request)
        chosen = filters(request)
        found = await pending_of(request, user, chosen)
        name = "pending_rows.html" if request.url.path == "/pending/rows" else "pending.html"
        return render(
            request,
            name,
            user=user,
            pending=found,
            filters=chosen,
            cursor=request.query_params.get("cursor", ""),
            refresh=config.refresh_seconds,
        )

    async def encrypted_page(request: Request, user: User, run_id: str) -> Response:
        # The run is there, this inbox has no keys: say so, and show what is in plain.
        shown = await what_server_shows(tools, run_id, config.ui_base)
        return render(request, "encrypted.html", user=user, view=shown)

    async def call_page(request: Request) -> Response:
        user = user_of(request)
        run_id, call_id = id_param(request, "run_id"), id_param(request, "call_id")
        try:
            view = await find_call(tools, run_id, call_id, config.registry, records)
        except PayloadsEncrypted:
            return await encrypted_page(request, user, run_id)
        if view is None:
            return render(request, "gone.html", 404, user=user, run_id=run_id, call_id=call_id)
        return render(
            request,
            "call.html",
            user=user,
            view=view,
            may_decide=decider_for(user, view.approval.deciders) is not None,
        )

    async def run_page(request: Request) -> Response:
        user = user_of(request)
        run_id = id_param(request, "run_id")
        try:
            view = await load_run(tools, run_id, config.ui_base)
        except PayloadsEncrypted:
            return await encrypted_page(request, user, run_id)
        return render(request, "run.html", user=user, view=view)

    def bounds(request: Request) -> tuple[int, int]:
        return page_bounds(request.query_params.get("offset"), request.query_params.get("limit"))

    async def run_tools_of(request: Request) -> ToolsPage:
        # The run page's gate: the same user check, and the same answers for a run that
        # does not exist or does not answer (the run's status query is asked first).
        offset, limit = bounds(request)
        return await load_run_tools(
            tools, id_param(request, "run_id"), records, offset=offset, limit=limit
        )

    async def run_tools_page(request: Request) -> Response:
        user = user_of(request)
        try:
            found = await run_tools_of(request)
        except PayloadsEncrypted:
            return await encrypted_page(request, user, id_param(request, "run_id"))
        return render(request, "tools.html", user=user, view=found)

    async def registry_tools_page(request: Request) -> Response:
        user = user_of(request)
        offset, limit = bounds(request)
        found = registry_tools(config.registry, offset=offset, limit=limit)
        return render(request, "tools.html", user=user, view=found)

    async def decide_form(request: Request) -> Response:
        user, form, run_id, call_id = await posted_call_form(request)
        action = form.get("action")
        if action not in ("approve", "deny", "remember"):
            raise HTTPException(400, "action must be approve, deny or remember")
        if action == "remember" and form.get("confirm") != "yes":
            # No one-click grant: say what it allows, and ask again.
            return await confirm_grant_page(request, user, form, run_id, call_id)
        try:
            verdict = await decide(
                tools,
                run_id,
                call_id,
                user,
                approve=action in ("approve", "remember"),
                arguments_hash=form.get("arguments_hash"),
                reason=form.get("reason") or None,
                remember=action == "remember",
            )
        except DecisionRefused as refused:
            return refused_page(request, user, refused, run_id, call_id)
        request.session["flash"] = f"{verdict}: call {call_id}"[:300]
        return RedirectResponse(f"/runs/{quote(run_id, safe='')}", 303)

    async def confirm_grant_page(
        request: Request, user: User, form: FormData, run_id: str, call_id: str
    ) -> Response:
        try:
            view = await find_call(tools, run_id, call_id, config.registry, records)
        except PayloadsEncrypted:
            return await encrypted_page(request, user, run_id)
        if view is None:
            return render(request, "gone.html", 404, user=user, run_id=run_id, call_id=call_id)
        if view.approval.arguments_hash != form.get("arguments_hash"):
            message = "the call's arguments changed since you saw them: look at it again"
            return refused_page(request, user, DecisionRefused(409, message), run_id, call_id)
        reason = form.get("reason")
        return render(
            request,
            "confirm_grant.html",
            user=user,
            view=view,
            reason=reason if isinstance(reason, str) else "",
        )

    # ------------------------------------------------------------------ JSON API

    async def api_pending(request: Request) -> Response:
        user = user_of(request)
        found = await pending_of(request, user, filters(request))
        return JSONResponse(pending_json(user.name, found))

    async def api_run_tools(request: Request) -> Response:
        user_of(request)
        return JSONResponse(tools_json(await run_tools_of(request)))

    async def api_registry_tools(request: Request) -> Response:
        user_of(request)
        offset, limit = bounds(request)
        return JSONResponse(tools_json(registry_tools(config.registry, offset=offset, limit=limit)))

    async def api_decide(request: Request) -> Response:
        user = user_of(request)
        try:
            approve, arguments_hash, reason = decision_body(await request.json())
        except BodyRefused as refused:
            return JSONResponse({"error": str(refused)}, 400)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            return JSONResponse({"error": "the body must be a JSON object"}, 400)
        require_csrf(request, user, request.headers.get(CSRF_HEADER))
        run_id, call_id = id_param(request, "run_id"), id_param(request, "call_id")
        try:
            verdict = await decide(
                tools,
                run_id,
                call_id,
                user,
                approve=approve,
                arguments_hash=arguments_hash,
                reason=reason,
            )
        except DecisionRefused as refused:
            return JSONResponse({"error": refused.message}, refused.status)
        return JSONResponse({"verdict": verdict, "run_id": run_id, "call_id": call_id})

    # ------------------------------------------------------------------ plumbing

    async def healthz(request: Request) -> Response:
        return Response("ok\n", media_type="text/plain")

    async def reissue_form(request: Request) -> Response:
        # A fresh authorization link for a call whose link expired (any signed-in user may
        # ask: the link grants nothing by itself, the person who opens it must authorize).
        user, _, run_id, call_id = await posted_call_form(request)
        try:
            renewed = await reissue(tools, run_id, call_id)
        except DecisionRefused as refused:
            return refused_page(request, user, refused, run_id, call_id)
        expires = renewed.expires_at.isoformat(timespec="seconds") if renewed.expires_at else "-"
        request.session["flash"] = f"new authorization link for call {call_id} (expires {expires})"[
            :300
        ]
        return RedirectResponse(f"/runs/{quote(run_id, safe='')}", 303)

    routes: list[BaseRoute] = [
        Route("/", pending_page),
        Route("/pending/rows", pending_page),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/tools", registry_tools_page),
        Route("/runs/{run_id}", run_page),
        Route("/runs/{run_id}/tools", run_tools_page),
        Route("/runs/{run_id}/calls/{call_id}", call_page),
        Route("/runs/{run_id}/calls/{call_id}/decide", decide_form, methods=["POST"]),
        Route("/runs/{run_id}/calls/{call_id}/reissue", reissue_form, methods=["POST"]),
        Route("/api/pending", api_pending),
        Route("/api/tools", api_registry_tools),
        Route("/api/runs/{run_id}/tools", api_run_tools),
        Route("/api/runs/{run_id}/calls/{call_id}/decide", api_decide, methods=["POST"]),
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    if config.oauth is not None:
        routes.insert(0, callback_route(config.oauth))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if config.oauth is not None:
            await config.oauth.resume()
        try:
            yield
        finally:
            if config.oauth is not None:
                await config.oauth.aclose()

    app = Starlette(
        routes=routes,
        middleware=[
            # First: refused with 413 once Content-Length, or the bytes streamed so far,
            # pass the limit, before anything buffers the body.
            *body_limit(config.max_body_bytes),
            Middleware(SecurityHeaders),
            Middleware(IdSegments),
            Middleware(
                SessionMiddleware,
                secret_key=config.session_secret or secrets.token_urlsafe(32),
                session_cookie=_SESSION_COOKIE,
                max_age=SESSION_AGE,
                same_site="strict",
                https_only=config.secure_cookies,
            ),
        ],
        exception_handlers=error_handlers(config.max_body_bytes),  # type: ignore[arg-type]
        lifespan=lifespan,
    )
    app.state.run_queries = queries  # how many queries the pending list sent, for operators
    return app
