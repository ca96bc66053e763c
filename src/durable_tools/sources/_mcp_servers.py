"""Where an MCP server is and how to reach it: `McpStdio`, `McpHttp`, `FromSecret`.

These are plain, frozen descriptions. Secret values are named, never held: a header or
environment value written as `FromSecret("name")` is looked up among the worker's
secrets when the connection opens, so it never enters a spec, a log or the history.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from durable_tools.tools._scrub import display_url

__all__ = ["FromSecret", "McpHttp", "McpServer", "McpStdio"]

_SECRET_ENV_PREFIX = "DURABLE_TOOLS_SECRET_"


@dataclass(frozen=True)
class FromSecret:
    """A value taken from the worker's secrets when the connection opens.

    Args:
        name: The secret's name (as in `build_worker(secrets=...)`, or the lower-cased NAME
            of a `DURABLE_TOOLS_SECRET_<NAME>` variable).
        template: How the value is written, `{}` standing for the secret, e.g. `Bearer {}`.
    """

    name: str
    template: str = "{}"


Value: TypeAlias = str | FromSecret


@dataclass(frozen=True)
class McpStdio:
    """An MCP server the worker starts as a subprocess and talks to over stdin/stdout."""

    command: str
    """The executable, e.g. `npx` or `sys.executable`."""
    args: tuple[str, ...] = ()
    """Its arguments."""
    env: Mapping[str, Value] = field(default_factory=dict)
    """Extra environment variables, merged over the SDK's safe default environment."""
    cwd: str | None = None
    """Working directory of the subprocess."""
    name: str | None = None
    """A short label: the default tool-name prefix, and how logs and errors name the server."""
    elicitation: bool = False
    """Let the server's tools ask the user questions (MCP elicitation) as durable pauses:
    connect with the 2026-07-28 protocol when the server speaks it (questions come back as
    input-required results) and announce the capability. Such a connection does not
    follow `tools/list_changed` (the 2026 protocol needs subscriptions for it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", dict(self.env))

    @property
    def label(self) -> str:
        """How errors and logs name this server."""
        return self.name or os.path.basename(self.command)

    def key(self) -> str:
        """A stable identity for the connection pool (secret names, never values)."""
        return json.dumps(
            {
                "stdio": self.command,
                "args": list(self.args),
                "env": {k: _describe(v) for k, v in sorted(self.env.items())},
                "cwd": self.cwd,
                **({"elicitation": True} if self.elicitation else {}),
            },
            sort_keys=True,
        )


@dataclass(frozen=True)
class McpHttp:
    """An MCP server reached over streamable HTTP."""

    url: str
    """The endpoint, e.g. `https://mcp.example.com/mcp`."""
    headers: Mapping[str, Value] = field(default_factory=dict)
    """Request headers; write credentials as `FromSecret(...)` so only the worker sees them."""
    name: str | None = None
    """A short label: the default tool-name prefix, and how logs and errors name the server."""
    timeout: float = 30.0
    """Seconds to connect and to send; responses may take as long as the tool's own timeout."""
    elicitation: bool = False
    """Let the server's tools ask the user questions (MCP elicitation) as durable pauses:
    connect with the 2026-07-28 protocol when the server speaks it (questions come back as
    input-required results) and announce the capability. Such a connection does not
    follow `tools/list_changed` (the 2026 protocol needs subscriptions for it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", dict(self.headers))

    @property
    def label(self) -> str:
        """How errors and logs name this server."""
        return self.name or display_url(self.url)

    def key(self) -> str:
        """A stable identity for the connection pool (secret names, never values)."""
        return json.dumps(
            {
                "http": self.url,
                "headers": {k: _describe(v) for k, v in sorted(self.headers.items())},
                **({"elicitation": True} if self.elicitation else {}),
            },
            sort_keys=True,
        )


McpServer: TypeAlias = McpStdio | McpHttp
"""An MCP server: started as a subprocess (`McpStdio`) or reached over HTTP (`McpHttp`)."""


def _describe(value: Value) -> str | dict[str, str]:
    if isinstance(value, FromSecret):
        return {"secret": value.name, "template": value.template}
    return value


def worker_secrets(explicit: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secrets a connection may use: `explicit` if given, else `DURABLE_TOOLS_SECRET_*`."""
    if explicit is not None:
        return dict(explicit)
    return {
        key[len(_SECRET_ENV_PREFIX) :].lower(): value
        for key, value in os.environ.items()
        if key.startswith(_SECRET_ENV_PREFIX) and value
    }


def resolve_value(value: Value, secrets: Mapping[str, str], *, what: str) -> str:
    """The concrete value of a header or environment variable.

    Raises:
        LookupError: the worker has no such secret (the message names it, never a value).
    """
    if isinstance(value, str):
        return value
    try:
        secret = secrets[value.name]
    except KeyError:
        raise LookupError(
            f"{what} needs the worker secret {value.name!r}, which this worker does not have"
        ) from None
    return value.template.replace("{}", secret)
