"""OAuth provider configuration: where to send people, where to swap codes for tokens.

Configuration names the environment variable that holds a client secret, never the secret
itself, so a providers file can be committed and shown to operators.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ._errors import OAuthConfigError, UnknownProvider

__all__ = ["OAuthProvider", "ProviderRegistry", "load_providers"]


class OAuthProvider(BaseModel):
    """One OAuth 2.0 authorization server and this application's client there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    """What tools name in `OAuthRequirement(provider=...)`."""
    authorize_url: str
    """The authorization endpoint people are sent to."""
    token_url: str
    """The token endpoint codes and refresh tokens are exchanged at."""
    client_id: str
    """This application's client id at the provider."""
    client_secret_env: str | None = None
    """Name of the environment variable holding the client secret; None for a public client."""
    redirect_uri: str
    """The callback URL registered at the provider, e.g. http://127.0.0.1:8765/oauth/callback."""
    scopes: tuple[str, ...] = ()
    """Scopes requested when a tool asks for none."""
    extra_authorize_params: dict[str, str] = Field(default_factory=dict)
    """More query parameters for the authorization URL (e.g. access_type=offline, prompt)."""
    scope_separator: str = " "
    """How scopes are joined in the `scope` parameter (a few providers want a comma)."""
    token_auth_method: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"
    """How the client authenticates at the token endpoint."""
    revocation_url: str | None = None
    """RFC 7009 revocation endpoint, called (best effort) when a grant is revoked."""

    @model_validator(mode="before")
    @classmethod
    def _no_inline_secret(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "client_secret" in data:
            raise ValueError(
                "client_secret must not be in provider config: put it in an environment "
                "variable and name that variable in client_secret_env"
            )
        return data

    @field_validator("authorize_url", "token_url", "redirect_uri", "revocation_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in ("http", "https"):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value

    def client_secret(self) -> str | None:
        """The client secret, read from the environment now.

        Raises:
            OAuthConfigError: `client_secret_env` names a variable that is not set.
        """
        if self.client_secret_env is None:
            return None
        secret = os.environ.get(self.client_secret_env)
        if not secret:
            raise OAuthConfigError(
                f"OAuth provider {self.name!r}: environment variable "
                f"{self.client_secret_env} (its client secret) is not set"
            )
        return secret

    def authorization_url(self, *, state: str, code_challenge: str, scopes: Iterable[str]) -> str:
        """The URL a person opens to grant access (authorization code flow with PKCE S256)."""
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": self.scope_separator.join(scopes),
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
            **self.extra_authorize_params,
        }
        if not params["scope"]:
            del params["scope"]
        separator = "&" if urlsplit(self.authorize_url).query else "?"
        return f"{self.authorize_url}{separator}{urlencode(params)}"


class ProviderRegistry:
    """The configured providers, by name."""

    def __init__(self, providers: Iterable[OAuthProvider] = ()) -> None:
        self._providers: dict[str, OAuthProvider] = {}
        for provider in providers:
            self.register(provider)

    def register(self, provider: OAuthProvider) -> None:
        """Add a provider.

        Raises:
            OAuthConfigError: A provider of that name is already registered.
        """
        if provider.name in self._providers:
            raise OAuthConfigError(f"OAuth provider {provider.name!r} is registered twice")
        self._providers[provider.name] = provider

    def get(self, name: str) -> OAuthProvider:
        """The provider of that name.

        Raises:
            UnknownProvider: None is configured.
        """
        try:
            return self._providers[name]
        except KeyError:
            known = ", ".join(sorted(self._providers)) or "none"
            raise UnknownProvider(
                f"no OAuth provider named {name!r} is configured (known: {known})"
            ) from None

    def names(self) -> list[str]:
        """Provider names, sorted."""
        return sorted(self._providers)

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def __iter__(self) -> Iterator[OAuthProvider]:
        return iter(self._providers.values())

    def __len__(self) -> int:
        return len(self._providers)


def load_providers(path: str | os.PathLike[str]) -> ProviderRegistry:
    """Read providers from a TOML or JSON file.

    Either shape works, in either format::

        [providers.github]            # a table per provider, the key is the name
        authorize_url = "..."

        {"providers": [{"name": "github", "authorize_url": "..."}]}

    Raises:
        OAuthConfigError: The file is unreadable or a provider is invalid (the message names
            the file and the provider).
    """
    file = Path(path)
    try:
        text = file.read_text()
        data: Any = tomllib.loads(text) if file.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as err:
        raise OAuthConfigError(f"cannot read OAuth providers from {file}: {err}") from err
    entries = data.get("providers") if isinstance(data, dict) else None
    if isinstance(entries, dict):
        items = [{"name": name, **body} for name, body in entries.items()]
    elif isinstance(entries, list):
        items = entries
    else:
        raise OAuthConfigError(f"{file}: expected a `providers` table or list")
    registry = ProviderRegistry()
    for item in items:
        label = item.get("name", "?") if isinstance(item, dict) else "?"
        try:
            registry.register(OAuthProvider.model_validate(item))
        except ValidationError as err:
            raise OAuthConfigError(f"{file}: OAuth provider {label!r}: {err}") from err
    return registry
