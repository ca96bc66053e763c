"""OAuth from a providers file: the worker's broker and the callback's manager."""

from __future__ import annotations

from pathlib import Path

from durable_tools.cli._errors import CliError
from durable_tools.oauth import (
    OAuthBroker,
    OAuthError,
    OAuthManager,
    load_providers,
)

__all__ = ["oauth_broker", "oauth_manager"]


def oauth_manager(providers_file: str) -> OAuthManager:
    """An OAuth manager for the providers in a TOML/JSON file, stores under DURABLE_TOOLS_HOME.

    The worker and `serve` must share the data directory and DURABLE_TOOLS_TOKEN_KEY: the
    callback stores the tokens the worker's tools then use.
    """
    path = Path(providers_file)
    if not path.is_file():
        raise CliError(f"no OAuth providers file at {path}", 2)
    try:
        return OAuthManager.from_data_dir(load_providers(path))
    except (OAuthError, ValueError) as error:
        raise CliError(f"OAuth configuration: {error}", 2) from None


def oauth_broker(providers_file: str | None) -> OAuthBroker | None:
    """The worker's broker, or None when no providers file is given."""
    return OAuthBroker(oauth_manager(providers_file)) if providers_file else None
