"""OAuth for tools, on the worker: providers, PKCE, encrypted token storage, the callback.

A tool that declares `oauth=OAuthRequirement(provider, scopes)` runs only with a grant of the
run's user. `OAuthManager.get_grant()` says whether one exists; if not, the run pauses and
shows the URL of `begin_authorization()`; the callback server completes the flow, stores the
tokens encrypted, and tells the run a `grant_ref`, never a token. Inside the tool,
`access_token()` returns a valid token, refreshing it when due.
"""

from ._broker import OAuthBroker, oauth_user, run_notifier
from ._callback_server import (
    CallbackApp,
    CallbackServer,
    HttpResponse,
    make_callback_app,
    serve_callback,
)
from ._delivery import NotifyRetry, OnComplete, OnError
from ._errors import (
    ExpiredState,
    InvalidState,
    OAuthConfigError,
    OAuthError,
    TokenEndpointError,
    TokenKeyError,
    UnknownProvider,
)
from ._flow import OAuthManager
from ._providers import OAuthProvider, ProviderRegistry, load_providers
from ._records import (
    AuthorizationFailure,
    AuthorizationRequest,
    CompletedAuthorization,
    PendingAuthorization,
)
from ._state import FileStateStore, MemoryStateStore, StateStore, UndeliveredOutcomes
from ._storage import KEY_ENV, generate_key, load_key
from ._tokens import FileTokenStore, Grant, MemoryTokenStore, StoredToken, TokenStore

__all__ = [
    "KEY_ENV",
    "AuthorizationFailure",
    "AuthorizationRequest",
    "CallbackApp",
    "CallbackServer",
    "CompletedAuthorization",
    "ExpiredState",
    "FileStateStore",
    "FileTokenStore",
    "Grant",
    "HttpResponse",
    "InvalidState",
    "MemoryStateStore",
    "MemoryTokenStore",
    "NotifyRetry",
    "OAuthBroker",
    "OAuthConfigError",
    "OAuthError",
    "OAuthManager",
    "OAuthProvider",
    "OnComplete",
    "OnError",
    "PendingAuthorization",
    "ProviderRegistry",
    "StateStore",
    "StoredToken",
    "TokenEndpointError",
    "TokenKeyError",
    "TokenStore",
    "UndeliveredOutcomes",
    "UnknownProvider",
    "generate_key",
    "load_key",
    "load_providers",
    "make_callback_app",
    "oauth_user",
    "run_notifier",
    "serve_callback",
]
