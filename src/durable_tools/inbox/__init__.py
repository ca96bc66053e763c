"""The web inbox: people approve or deny pending tool calls, authenticated.

`create_app()` builds a Starlette app with the pages (pending approvals across runs, a
call, a run), a JSON API under `/api/`, token login with a signed session cookie, CSRF
protection, and optionally the OAuth callback. `durable-tools serve` runs it with uvicorn.
Needs the `inbox` extra (`pip install 'durable-tools[inbox]'`).
"""

from ._app import InboxConfig, create_app
from ._auth import AuthConfig, authenticate, decider_for
from ._decide import DecisionRefused, decide
from ._serve import SECRET_ENV, InboxServer, default_tokens_file, session_secret
from ._tokens import TokenFileError, TokenStore, User, add_token, hash_token

__all__ = [
    "SECRET_ENV",
    "AuthConfig",
    "DecisionRefused",
    "InboxConfig",
    "InboxServer",
    "TokenFileError",
    "TokenStore",
    "User",
    "add_token",
    "authenticate",
    "create_app",
    "decide",
    "decider_for",
    "default_tokens_file",
    "hash_token",
    "session_secret",
]
