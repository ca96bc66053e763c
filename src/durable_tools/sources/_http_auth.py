"""Worker-side credentials for HTTP tools: what each auth object sets, and where.

Credentials never come from the model: auth objects read worker-side secrets or the
run's OAuth grant when the request is built, the headers and query parameters they set
are not in any input schema, and error messages never quote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import NeedsAuthorization
from durable_tools.tools._spec import OAuthRequirement

__all__ = [
    "AUTH_HEADER_NAMES",
    "BearerSecret",
    "HeaderSecret",
    "HttpAuth",
    "OAuthBearer",
    "QueryPairs",
    "QuerySecret",
    "apply_auth",
    "as_auth_list",
]

QueryPairs = list[tuple[str, str | int | float | bool | None]]
"""Query parameters as httpx takes them, in order."""

AUTH_HEADER_NAMES = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "x-api-key",
        "api-key",
        "apikey",
        "x-auth-token",
        "x-access-token",
        "x-csrf-token",
    }
)
"""Header names (lower case) the model may never set: dropped from every input schema."""


class HttpAuth:
    """Worker-side credentials for a request. Subclasses say what they set and where."""

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        """Headers to add; read secrets from `ctx` here, at call time."""
        return {}

    def query(self, ctx: ToolContext) -> dict[str, str]:
        """Query parameters to add (for APIs that take a key in the URL)."""
        return {}

    def reserved_headers(self) -> frozenset[str]:
        """Header names (lower case) this auth sets; the model may never set them."""
        return frozenset()

    def reserved_query(self) -> frozenset[str]:
        """Query parameter names this auth sets; the model may never set them."""
        return frozenset()

    def requirement(self) -> OAuthRequirement | None:
        """The OAuth grant the tools need, if any."""
        return None

    def on_unauthorized(self, status: int) -> Exception | None:
        """An error to raise for a 401/403 instead of the default, or None."""
        return None

    def secret_values(self, ctx: ToolContext) -> list[str]:
        """The credentials this auth sends, scrubbed from whatever the service answers
        (APIs echo a query key in error bodies and in pagination links).

        The default: every query and header value it sets, and the last word of each
        header value (the token after `Bearer`).
        """
        values = [*self.query(ctx).values(), *self.headers(ctx).values()]
        return [*values, *(v.split()[-1] for v in values if len(v.split()) > 1)]


@dataclass(frozen=True)
class BearerSecret(HttpAuth):
    """`Authorization: Bearer <secret>` from a worker-side secret.

    Args:
        secret_name: The secret's name on the worker (`ctx.secret(secret_name)`).
    """

    secret_name: str
    header: str = "Authorization"
    """The header to set."""
    scheme: str = "Bearer"
    """The word before the token; empty for none."""

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        token = ctx.secret(self.secret_name)
        return {self.header: f"{self.scheme} {token}" if self.scheme else token}

    def reserved_headers(self) -> frozenset[str]:
        return frozenset({self.header.lower()})


@dataclass(frozen=True)
class HeaderSecret(HttpAuth):
    """Any header (`X-API-Key: <secret>`) from a worker-side secret.

    Args:
        header: The header name.
        secret_name: The secret's name on the worker.
    """

    header: str
    secret_name: str
    prefix: str = ""
    """Text put before the secret, e.g. `"Token "`."""

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        return {self.header: f"{self.prefix}{ctx.secret(self.secret_name)}"}

    def reserved_headers(self) -> frozenset[str]:
        return frozenset({self.header.lower()})


@dataclass(frozen=True)
class QuerySecret(HttpAuth):
    """A query parameter (`?api_key=<secret>`) from a worker-side secret.

    Args:
        param: The query parameter's name.
        secret_name: The secret's name on the worker.
    """

    param: str
    secret_name: str

    def query(self, ctx: ToolContext) -> dict[str, str]:
        return {self.param: ctx.secret(self.secret_name)}

    def reserved_query(self) -> frozenset[str]:
        return frozenset({self.param})


@dataclass(frozen=True)
class OAuthBearer(HttpAuth):
    """`Authorization: Bearer <token>` from the OAuth grant of the run's user.

    The tools get `oauth=OAuthRequirement(provider, scopes)`, so the worker resolves the
    user's token (or the run pauses for authorization) before each call. A 401 from the
    API pauses the run again for a fresh grant.

    Args:
        provider: The OAuth provider's name on the worker's broker. None: pass
            `oauth=OAuthRequirement(...)` yourself (per tool or in `defaults`).
        scopes: Scopes every tool needs; OpenAPI operations add their own.
    """

    provider: str | None = None
    scopes: tuple[str, ...] = ()

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        if not ctx.access_token:
            raise NeedsAuthorization(f"tool {ctx.tool_name!r} needs the user's OAuth grant")
        return {"Authorization": f"Bearer {ctx.access_token}"}

    def reserved_headers(self) -> frozenset[str]:
        return frozenset({"authorization"})

    def requirement(self) -> OAuthRequirement | None:
        if self.provider is None:
            return None
        return OAuthRequirement(provider=self.provider, scopes=self.scopes)

    def on_unauthorized(self, status: int) -> Exception | None:
        if status == 401:
            return NeedsAuthorization(
                "the API rejected the user's OAuth token (HTTP 401); it needs a new grant"
            )
        return None


def as_auth_list(auth: HttpAuth | Sequence[HttpAuth] | None) -> tuple[HttpAuth, ...]:
    """Normalise the `auth=` option to a tuple."""
    if auth is None:
        return ()
    if isinstance(auth, HttpAuth):
        return (auth,)
    return tuple(auth)


def apply_auth(
    auths: Sequence[HttpAuth], ctx: ToolContext, query: QueryPairs, headers: dict[str, str]
) -> QueryPairs:
    """Add each auth's credentials, replacing whatever else set the same names.

    Called last when a request is built: whatever else was set, credentials come only
    from the worker. `headers` is updated in place; the new query pairs are returned.
    """
    for auth in auths:
        for reserved in auth.reserved_query():
            query = [(k, v) for k, v in query if k != reserved]
        query.extend(auth.query(ctx).items())
        headers.update(auth.headers(ctx))
    return query
