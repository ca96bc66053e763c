"""A fake OAuth 2.0 provider: a real HTTP server on 127.0.0.1, in a thread.

- `GET /authorize` approves at once (or denies, if told) and redirects to the client's
  `redirect_uri` with a code and the state, remembering the PKCE challenge it was given.
- `POST /token` swaps a code (checking client, redirect URI and the PKCE verifier against
  the challenge) or a refresh token for a new access token that expires in `expires_in`.
- `POST /revoke` accepts anything (RFC 7009).
- `revoke_all()` makes every refresh token fail with 400 invalid_grant.

Reusable: `with FakeOAuthProvider() as fake: fake.provider_config(redirect_uri=...)`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from durable_tools.oauth import OAuthProvider

__all__ = ["FakeOAuthProvider", "IssuedCode"]


@dataclass
class IssuedCode:
    client_id: str
    redirect_uri: str
    challenge: str
    challenge_method: str
    scopes: tuple[str, ...]


@dataclass
class _Refresh:
    scopes: tuple[str, ...]
    revoked: bool = False


@dataclass
class FakeOAuthProvider:
    client_id: str = "test-client"
    client_secret: str | None = "test-secret"
    expires_in: int = 3600
    """Lifetime of access tokens issued from now on."""
    refresh_delay: float = 0.0
    """Seconds the token endpoint sleeps on a refresh (to make concurrent callers overlap)."""
    deny: bool = False
    """`/authorize` redirects with error=access_denied."""
    deny_description: str = "user said no"
    """The `error_description` of a denial."""
    rotate_refresh_tokens: bool = False

    codes: dict[str, IssuedCode] = field(default_factory=dict)
    refresh_tokens: dict[str, _Refresh] = field(default_factory=dict)
    access_tokens: list[str] = field(default_factory=list)
    requests: list[dict[str, str]] = field(default_factory=list)
    """Every token request's form (for assertions; tests only)."""
    revocations: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeOAuthProvider:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._get(self)

            def do_POST(self) -> None:
                fake._post(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOAuthProvider:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def provider_config(
        self,
        *,
        name: str = "fake",
        redirect_uri: str = "http://127.0.0.1:8765/oauth/callback",
        client_secret_env: str | None = "FAKE_OAUTH_CLIENT_SECRET",
        scopes: tuple[str, ...] = ("read",),
        **extra: Any,
    ) -> OAuthProvider:
        """An `OAuthProvider` pointing at this fake (set the secret env var yourself)."""
        return OAuthProvider(
            name=name,
            authorize_url=f"{self.base_url}/authorize",
            token_url=f"{self.base_url}/token",
            revocation_url=f"{self.base_url}/revoke",
            client_id=self.client_id,
            client_secret_env=client_secret_env,
            redirect_uri=redirect_uri,
            scopes=scopes,
            **extra,
        )

    # -- controls for tests --------------------------------------------------------------

    def revoke_all(self) -> None:
        """Every refresh token issued so far fails from now on (400 invalid_grant)."""
        with self._lock:
            for refresh in self.refresh_tokens.values():
                refresh.revoked = True

    def issue_code(
        self, challenge: str, scopes: tuple[str, ...] = (), redirect_uri: str = ""
    ) -> str:
        """A code, as `/authorize` would issue it."""
        code = "code-" + secrets.token_urlsafe(12)
        with self._lock:
            self.codes[code] = IssuedCode(self.client_id, redirect_uri, challenge, "S256", scopes)
        return code

    def count(self, grant_type: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.get("grant_type") == grant_type)

    # -- HTTP ----------------------------------------------------------------------------

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        if url.path != "/authorize":
            self._send(handler, 404, {"error": "not_found"})
            return
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        redirect = q["redirect_uri"]
        if self.deny:
            params = {"error": "access_denied", "error_description": self.deny_description}
        else:
            code = "code-" + secrets.token_urlsafe(12)
            with self._lock:
                self.codes[code] = IssuedCode(
                    client_id=q["client_id"],
                    redirect_uri=redirect,
                    challenge=q["code_challenge"],
                    challenge_method=q["code_challenge_method"],
                    scopes=tuple(q.get("scope", "").split()),
                )
            params = {"code": code}
        params["state"] = q["state"]
        handler.send_response(302)
        handler.send_header("Location", f"{redirect}?{urlencode(params)}")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(handler.rfile.read(length).decode()).items()}
        path = urlsplit(handler.path).path
        if path == "/revoke":
            with self._lock:
                self.revocations.append(form.get("token", ""))
            self._send(handler, 200, {})
            return
        if path != "/token":
            self._send(handler, 404, {"error": "not_found"})
            return
        with self._lock:
            self.requests.append(dict(form))
        client_id, secret = form.get("client_id"), form.get("client_secret")
        auth = handler.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        if client_id != self.client_id or (
            self.client_secret is not None and secret != self.client_secret
        ):
            self._send(handler, 401, {"error": "invalid_client"})
            return
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            self._exchange(handler, form)
        elif grant_type == "refresh_token":
            if self.refresh_delay:
                time.sleep(self.refresh_delay)
            self._refresh(handler, form)
        else:
            self._send(handler, 400, {"error": "unsupported_grant_type"})

    def _exchange(self, handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        with self._lock:
            issued = self.codes.pop(form.get("code", ""), None)  # codes are single-use
        if issued is None:
            self._send(handler, 400, {"error": "invalid_grant", "error_description": "bad code"})
            return
        if issued.redirect_uri and form.get("redirect_uri") != issued.redirect_uri:
            self._send(
                handler, 400, {"error": "invalid_grant", "error_description": "redirect_uri"}
            )
            return
        verifier = form.get("code_verifier", "")
        digest = hashlib.sha256(verifier.encode()).digest()
        if (
            issued.challenge_method != "S256"
            or not 43 <= len(verifier) <= 128
            or base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != issued.challenge
        ):
            self._send(handler, 400, {"error": "invalid_grant", "error_description": "PKCE failed"})
            return
        self._send(handler, 200, self._issue(issued.scopes, new_refresh=True))

    def _refresh(self, handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        token = form.get("refresh_token", "")
        with self._lock:
            refresh = self.refresh_tokens.get(token)
            if refresh is None or refresh.revoked:
                body = {"error": "invalid_grant", "error_description": "revoked"}
                self._send(handler, 400, body)
                return
            if self.rotate_refresh_tokens:
                refresh.revoked = True
        self._send(
            handler, 200, self._issue(refresh.scopes, new_refresh=self.rotate_refresh_tokens)
        )

    def _issue(self, scopes: tuple[str, ...], *, new_refresh: bool) -> dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(16)
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": " ".join(scopes),
        }
        with self._lock:
            self.access_tokens.append(access)
            if new_refresh:
                refresh = "rt-" + secrets.token_urlsafe(16)
                self.refresh_tokens[refresh] = _Refresh(scopes)
                body["refresh_token"] = refresh
        return body

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
