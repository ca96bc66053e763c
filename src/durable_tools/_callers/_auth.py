"""Who is asking: Bearer tokens, a signed session cookie, or a trusted proxy's header.

Every request of the inbox goes through `authenticate`; nothing is served to nobody. The
proxy header is believed only when the TCP peer is one of the configured proxy addresses;
from anywhere else it is ignored (so a browser cannot claim a name by sending it). The peer
is the socket's: the servers here run uvicorn with `proxy_headers=False`, so no
`X-Forwarded-For` rewrites it (an app hosted otherwise must be served the same way).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from starlette.requests import HTTPConnection

from durable_tools.protocol._deciders import decider_name

from ._sessions import EndedSessions, ended_sessions_file
from ._tokens import TokenStore, User, valid_user

__all__ = ["AuthConfig", "authenticate", "decider_for"]

SESSION_TOKEN = "token_sha256"
"""Session key holding the sha256 of the token the user logged in with."""
SESSION_ID = "sid"
"""Session key holding the session's random id (what a logout ends)."""
SESSION_ISSUED = "iat"
"""Session key holding when the session was issued (seconds since the epoch)."""


@dataclass(frozen=True)
class AuthConfig:
    """How the inbox authenticates.

    Args:
        tokens: The API tokens file's users (Bearer tokens and the login form).
        trusted_proxies: Peer addresses or networks whose `user_header` is believed.
        user_header: The header a trusted proxy sets to the authenticated user's name.
        sessions: The sessions ended by logout; default the file beside the tokens file
            (`inbox-tokens.logouts.json`), shared by every server using those tokens.
    """

    tokens: TokenStore
    trusted_proxies: Sequence[str] = ()
    user_header: str = "X-Forwarded-User"
    sessions: EndedSessions | None = None
    _networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        init=False, default=()
    )

    def __post_init__(self) -> None:
        networks = tuple(ipaddress.ip_network(p, strict=False) for p in self.trusted_proxies)
        object.__setattr__(self, "_networks", networks)
        if self.sessions is None:
            ended = EndedSessions(ended_sessions_file(self.tokens.path))
            object.__setattr__(self, "sessions", ended)

    @property
    def ended_sessions(self) -> EndedSessions:
        """The sessions ended by logout (set by `__post_init__`)."""
        assert self.sessions is not None
        return self.sessions

    def trusts(self, peer: str | None) -> bool:
        """Whether `peer` (an IP address) is a configured proxy."""
        if not peer or not self._networks:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self._networks)


def authenticate(conn: HTTPConnection, config: AuthConfig) -> User | None:
    """The user a request comes from, or None.

    Order: an `Authorization: Bearer` token (scripts; exempt from CSRF checks since no
    cookie is involved), then the trusted proxy's header, then the session cookie set by
    the login form. A Bearer header that does not match refuses the request outright
    rather than falling back to a cookie. From a trusted proxy, a user header that is
    repeated, empty or not a valid user name refuses the request too (a proxy that passes
    a client's header through and appends its own must not let the client's count).
    """
    header = conn.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        user = config.tokens.user_for(token.strip())
        return User(user.name, user.groups, via="token") if user else None
    peer = conn.client.host if conn.client else None
    claimed = conn.headers.getlist(config.user_header)
    if claimed and config.trusts(peer):
        if len(claimed) != 1 or not valid_user(claimed[0]):
            return None
        return User(claimed[0], config.tokens.groups_of(claimed[0]), via="proxy")
    session = conn.session if "session" in conn.scope else {}
    digest = session.get(SESSION_TOKEN)
    ended = config.ended_sessions
    if isinstance(digest, str) and ended.is_live(
        session.get(SESSION_ID), session.get(SESSION_ISSUED)
    ):
        # Re-checked on every request: removing the user from the file ends the session.
        found = config.tokens.user_for_hash(digest)
        if found is not None:
            return User(found.name, found.groups, via="session")
    return None


def decider_for(user: User, deciders: Sequence[str]) -> str | None:
    """The decider name to send for `user`, or None if the deciders exclude them.

    The rule of `protocol._deciders.decider_name` (the one the run applies): a policy's
    deciders name people (`alice`, however spelled) or groups (`group:ops`); an empty list
    means anyone. A member of a named group decides as `alice via group:ops`, so the
    history records both the person and the group that allowed them.
    """
    return decider_name(user.name, user.groups, deciders)
