"""The inbox app's building blocks besides its routes: security headers on every response,
the templates, the login redirect check, and the OAuth callback re-hosted as a route."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, unquote, urlencode

import jinja2
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from durable_tools._encrypted import ENCRYPTED_NOTE
from durable_tools.oauth import CallbackApp
from durable_tools.protocol._invisible import show_invisible
from durable_tools.tools._approval_summary import VALUE_CLOSE, VALUE_OPEN, summary_spans

__all__ = [
    "HERE",
    "IdSegments",
    "SecurityHeaders",
    "callback_route",
    "id_param",
    "make_templates",
    "marked_summary",
    "safe_next",
]

HERE = Path(__file__).parent
"""The package directory: `templates/` and `static/`."""
_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Adds CSP, framing, sniffing, referrer and caching headers to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _HEADERS if k not in present]
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        await self.app(scope, receive, with_headers)


_ID_PATHS = ("/runs/", "/api/runs/")
"""Where paths carry a run's and a call's id, each in one segment."""
_RAW_IDS = "durable_tools.raw_ids"
"""The scope key saying the path was routed undecoded (`IdSegments`)."""


class IdSegments:
    """Routes the paths that carry ids on the path as sent, each id still percent-encoded.

    Run and call ids may hold a slash (a code-mode script's host calls are `s1/1`, a
    sub-agent's id ends with its call's key, a model names its calls as it likes); the
    pages put each id in one path segment (`s1%2F1`). The server decodes the path before
    routing, which would split that segment in two and answer 404: so these paths are
    routed undecoded, and `id_param` decodes each id.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if isinstance(raw, bytes):
            # Some clients put the query in raw_path too (httpx's ASGI transport).
            path = raw.split(b"?", 1)[0].decode("latin-1")
            if path.startswith(_ID_PATHS):
                scope = {**scope, "path": path, _RAW_IDS: True}
        await self.app(scope, receive, send)


def id_param(request: Request, name: str) -> str:
    """The id a path carries as `name` (`run_id`, `call_id`), decoded."""
    value: str = request.path_params[name]
    return unquote(value, errors="replace") if request.scope.get(_RAW_IDS) else value


def make_templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every field escaped, whatever the template
        undefined=jinja2.StrictUndefined,
        finalize=_invisible_shown,  # every field, whatever the template
    )
    env.filters["pretty"] = lambda value: json.dumps(
        value, indent=2, sort_keys=True, ensure_ascii=True
    )
    env.filters["when"] = lambda value: value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "-"
    env.filters["q"] = lambda value: quote(str(value), safe="")
    env.filters["query"] = _query_string
    env.filters["summary"] = marked_summary
    env.globals["encrypted_note"] = ENCRYPTED_NOTE
    return Jinja2Templates(env=env)


def _invisible_shown(value: object) -> object:
    """A field's value with its zero-width and bidi characters as visible escapes: text
    a run or a sub-agent's notice carries can neither hide in a page nor reorder it.
    Markup stays markup (the escapes add no HTML)."""
    if isinstance(value, Markup):
        return Markup(show_invisible(str(value)))
    if isinstance(value, str):
        return show_invisible(value)
    return value


def marked_summary(summary: str) -> Markup:
    """An approval summary as HTML: every part escaped, each model-written value between
    its marks and in a styled `<bdi class="value">` (isolated, so that right-to-left text
    in it cannot reorder the marks or the words around it)."""
    html = []
    for text, is_value in summary_spans(summary):
        if is_value:
            value = f'<bdi class="value" title="written by the model">{escape(text)}</bdi>'
            html.append(VALUE_OPEN + value + VALUE_CLOSE)
        else:
            html.append(str(escape(text)))
    return Markup("".join(html))


def _query_string(filters: dict[str, str], **changed: str) -> str:
    """The non-empty filters (with `changed` applied) as a URL query string."""
    return urlencode({k: v for k, v in {**filters, **changed}.items() if v})


def safe_next(target: str | None) -> str:
    # Only local paths: a login link must not send the user to another site.
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def callback_route(callback: CallbackApp) -> Route:
    """The OAuth redirect endpoint, re-hosted: `CallbackApp` keeps all its logic."""

    async def oauth_callback(request: Request) -> Response:
        query = request.url.query
        target = request.url.path + (f"?{query}" if query else "")
        answer = await callback(request.method, target)
        return Response(
            answer.body if request.method != "HEAD" else b"",
            answer.status,
            headers={"content-type": answer.content_type},
        )

    return Route(callback.path, oauth_callback, methods=["GET", "HEAD"])
