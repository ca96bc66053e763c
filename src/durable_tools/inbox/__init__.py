"""The web inbox: people approve or deny pending tool calls, authenticated.

`create_app()` builds a Starlette app with the pages (pending approvals across runs, a
call, a run), a JSON API under `/api/`, token login with a signed session cookie, CSRF
protection, and optionally the OAuth callback. `durable-tools serve` runs it with uvicorn.
Needs the `inbox` extra (`pip install 'durable-tools[inbox]'`).
"""

from durable_tools._callers._auth import AuthConfig, authenticate
from durable_tools._callers._sessions import EndedSessions, ended_sessions_file
from durable_tools._callers._tokens import TokenFileError, TokenStore, User, add_token

from ._app import DEFAULT_MAX_BODY_BYTES, InboxConfig, create_app
from ._decide import DecisionRefused, decide
from ._serve import SECRET_ENV, InboxServer, default_tokens_file, session_secret

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "SECRET_ENV",
    "AuthConfig",
    "DecisionRefused",
    "EndedSessions",
    "InboxConfig",
    "InboxServer",
    "TokenFileError",
    "TokenStore",
    "User",
    "add_token",
    "authenticate",
    "create_app",
    "decide",
    "default_tokens_file",
    "ended_sessions_file",
    "session_secret",
]
