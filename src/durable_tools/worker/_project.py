"""The project file: one TOML file that configures a deployment without a Python module.

`durable-tools worker --project durable-tools.toml`, `durable-tools run --project ...` and
`await load_project(path).plugin()` read the same file: the task queue, MCP servers,
OpenAPI documents and single HTTP endpoints whose tools the workers serve, the worker's
limits, and the approval policy and limits of the runs started from it. A Python tools
module (`tools = "myapp.tools"`) is optional: its tools come first, the sources' after.

Parsing is strict, since a silently ignored key in a deployment's configuration is a rule
that does not hold: unknown keys, wrong types, numbers out of range, non-finite numbers,
paths outside the project's folder and inline credentials are refused, each error naming
the file and the key. Secrets are named, never written: `{ secret = "name" }` is the
worker's `DURABLE_TOOLS_SECRET_<NAME>` variable, read when a connection opens.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from durable_tools.protocol._models import ModelLimits
from durable_tools.protocol._policy_types import ApprovalPolicy
from durable_tools.protocol._types import Limits
from durable_tools.tools._registry import ToolRegistry
from durable_tools.worker._build import load_registry, secrets_from_env
from durable_tools.worker._plugin import DurableToolsPlugin

if TYPE_CHECKING:
    from durable_tools.sources import ProviderRefresher

__all__ = [
    "MAX_PROJECT_BYTES",
    "PROJECT_ENV",
    "Project",
    "ProjectError",
    "load_project",
]

PROJECT_ENV = "DURABLE_TOOLS_PROJECT"
"""The project file a command reads when it is given no `--project`."""

MAX_PROJECT_BYTES = 256_000
"""The largest project file read: a configuration, not a data set."""

_MAX_SOURCES = 64
_MAX_LIST = 256
_MAX_TEXT = 2_000
_WEEK = 7 * 24 * 3600.0
_MAX_DEPTH = 64
_CREDENTIAL = re.compile(r"auth|cookie|token|secret|passw|key|credential|signature|session", re.I)
"""A header, variable or query parameter named like a credential (docs/project.md): its
value must be `{ secret = "NAME" }`, never written in the file."""
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"

Text = Annotated[str, Field(max_length=_MAX_TEXT)]
Name = Annotated[str, Field(pattern=_NAME)]
SecretName = Annotated[str, Field(pattern=_NAME), AfterValidator(str.lower)]
"""A worker secret's name: `DURABLE_TOOLS_SECRET_<NAME>`, which the worker keys lower-case
(`secrets_from_env`), so `FILES_TOKEN` and `files_token` name the same secret."""
HeaderValue = Annotated[str, Field(max_length=_MAX_TEXT, pattern=r"^[^\r\n\x00]*$")]
"""Text written into an HTTP header: no CR, LF or NUL to end the header and smuggle another."""
Seconds = Annotated[float, Field(gt=0, le=_WEEK, allow_inf_nan=False)]
Url = Annotated[str, Field(pattern=r"^https?://[^\s]+$", max_length=_MAX_TEXT)]
HeaderName = Annotated[str, Field(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")]
"""An HTTP header's name (RFC 9110 token): no space, colon or line break to smuggle."""
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")]


class ProjectError(ValueError):
    """The project file cannot be read or breaks the schema; the message names the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class SecretRef(_Strict):
    """A credential by reference: the worker's secret `secret` (`DURABLE_TOOLS_SECRET_<NAME>`)."""

    secret: SecretName
    template: HeaderValue = "{}"
    """How the value is written, `{}` standing for the secret, e.g. `Bearer {}`."""


class HttpAuthRef(_Strict):
    """Worker-side credentials of an OpenAPI or HTTP source, by secret name."""

    kind: Literal["bearer", "header", "query"]
    secret: SecretName
    name: Text | None = None
    """The header (kind `header`) or query parameter (kind `query`) carrying the secret."""
    prefix: HeaderValue = ""
    """Written before the secret in a header (kind `header`)."""

    @model_validator(mode="after")
    def _named(self) -> HttpAuthRef:
        if self.kind != "bearer" and not self.name:
            raise ValueError(f"an auth of kind {self.kind!r} needs `name`")
        return self


class ToolDefaults(_Strict):
    """`ToolOptions` for every tool of a source (the subset a file may set)."""

    approval: bool | None = None
    read_only: bool | None = None
    idempotent: bool | None = None
    spends_money: bool | None = None
    requires_confirmation: bool | None = None
    tags: list[Name] | None = Field(default=None, max_length=32)
    start_to_close_timeout: Seconds | None = None
    schedule_to_close_timeout: Seconds | None = None
    max_concurrent: int | None = Field(default=None, ge=1, le=10_000)
    rate_limit: float | None = Field(default=None, gt=0, le=1e6)
    max_calls_per_run: int | None = Field(default=None, ge=1, le=1_000_000)

    def options(self) -> dict[str, Any]:
        """The keyword arguments of `ToolRegistry.tool` these stand for."""
        return self.model_dump(exclude_none=True)


class McpSource(_Strict):
    """An MCP server: `url` (streamable HTTP) or `command` (a subprocess over stdio)."""

    name: Name
    """The tool-name prefix (`name__tool`), and how logs and errors name the server."""
    url: Url | None = None
    headers: dict[HeaderName, HeaderValue | SecretRef] = Field(default_factory=dict, max_length=64)
    command: Text | None = None
    args: list[Text] = Field(default_factory=list, max_length=_MAX_LIST)
    env: dict[EnvName, Text | SecretRef] = Field(default_factory=dict, max_length=64)
    cwd: Text | None = None
    timeout_seconds: Seconds = 30.0
    elicitation: bool = False
    include: list[Text] | None = Field(default=None, max_length=_MAX_LIST)
    exclude: list[Text] | None = Field(default=None, max_length=_MAX_LIST)
    options: ToolDefaults = Field(default_factory=ToolDefaults)

    @model_validator(mode="after")
    def _one_transport(self) -> McpSource:
        if (self.url is None) == (self.command is None):
            raise ValueError("give `url` (streamable HTTP) or `command` (stdio), not both")
        if self.url is None and self.headers:
            raise ValueError("`headers` are for a server reached by `url`")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError("`args`, `env` and `cwd` are for a server started by `command`")
        _no_inline_credentials("headers", self.headers)
        _no_inline_credentials("env", self.env)
        if self.url is not None:
            _no_url_credentials("url", self.url)
        if self.cwd is not None:
            _inside("cwd", self.cwd)
        return self


class OpenApiSource(_Strict):
    """An OpenAPI 3 (or Swagger 2) document: one tool per operation."""

    document: Text
    """A path relative to the project file, or an http(s) URL."""
    prefix: Name | None = None
    base_url: Url | None = None
    include: list[Text] | None = Field(default=None, max_length=_MAX_LIST)
    exclude: list[Text] = Field(default_factory=list, max_length=_MAX_LIST)
    auth: HttpAuthRef | None = None
    headers: dict[HeaderName, HeaderValue] = Field(default_factory=dict, max_length=64)
    options: ToolDefaults = Field(default_factory=ToolDefaults)
    refresh_seconds: float | None = Field(default=None, ge=1, le=_WEEK, allow_inf_nan=False)
    """Read the document again this often while the worker runs (`ProviderRefresher`):
    changed operations replace their tools, dropped ones are withdrawn. None: only at
    worker start."""

    @model_validator(mode="after")
    def _checked(self) -> OpenApiSource:
        if not self.document.startswith(("http://", "https://")):
            _inside("document", self.document)
        else:
            _no_url_credentials("document", self.document)
        if self.base_url is not None:
            _no_url_credentials("base_url", self.base_url)
        _no_inline_credentials("headers", self.headers)
        return self


class HttpSource(_Strict):
    """One HTTP endpoint as one tool (`sources.http_tool`)."""

    name: Name
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    url: Url
    """The full URL; `{placeholders}` are path parameters."""
    description: Text = ""
    input_schema: dict[str, Any] | None = None
    query: list[Text] | None = Field(default=None, max_length=_MAX_LIST)
    auth: HttpAuthRef | None = None
    headers: dict[HeaderName, HeaderValue] = Field(default_factory=dict, max_length=64)
    options: ToolDefaults = Field(default_factory=ToolDefaults)

    @model_validator(mode="after")
    def _checked(self) -> HttpSource:
        _no_url_credentials("url", self.url)
        _no_inline_credentials("headers", self.headers)
        return self


class WorkerSettings(_Strict):
    """What `durable-tools worker` takes as flags, for every worker of the deployment."""

    max_concurrent_activities: int | None = Field(default=None, ge=1, le=100_000)
    graceful_shutdown_seconds: float | None = Field(default=None, ge=0, le=_WEEK)
    require_identity: bool = False
    model_limits: dict[Text, ModelLimits] = Field(default_factory=dict, max_length=100)


class RunSettings(_Strict):
    """Defaults of the runs `durable-tools run --project` starts (flags win)."""

    model: Text | None = None
    instructions: Annotated[str, Field(max_length=100_000)] | None = None
    name: Name | None = None


class Project(_Strict):
    """A parsed project file (`load_project`)."""

    _root: Path = PrivateAttr(default_factory=Path.cwd)
    _refreshers: list[Any] = PrivateAttr(default_factory=list)
    task_queue: Annotated[str, Field(pattern=r"^[^\s]{1,200}$")] | None = None
    tools: Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*(:[A-Za-z_]\w*)?$")] | None = None
    """A Python module holding a `ToolRegistry` (`MODULE[:ATTR]`), if the project has one."""
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    run: RunSettings = Field(default_factory=RunSettings)
    policy: ApprovalPolicy | None = None
    limits: Limits | None = None
    mcp: list[McpSource] = Field(default_factory=list, max_length=_MAX_SOURCES)
    openapi: list[OpenApiSource] = Field(default_factory=list, max_length=_MAX_SOURCES)
    http: list[HttpSource] = Field(default_factory=list, max_length=_MAX_SOURCES)

    @property
    def root(self) -> Path:
        """The folder the file's paths start from: the project file's."""
        return self._root

    def _paths(self) -> list[tuple[str, str]]:
        """Each path the file names (key, path), relative to `root`."""
        paths = [
            (f"openapi.{i}.document", source.document)
            for i, source in enumerate(self.openapi)
            if not source.document.startswith(("http://", "https://"))
        ]
        paths += [(f"mcp.{i}.cwd", source.cwd) for i, source in enumerate(self.mcp) if source.cwd]
        return paths

    async def registry(
        self, base: ToolRegistry | None = None, *, secrets: Mapping[str, str] | None = None
    ) -> ToolRegistry:
        """The project's tools: `base` (else the `tools` module's registry, else a new one),
        with every MCP server's, OpenAPI document's and HTTP endpoint's tools attached.

        Raises:
            ProjectError: `tools` names no registry.
            McpConnectionError, OpenAPIError: a source cannot be reached or read.
        """
        # Imported here: the sources pull in HTTP libraries a workflow sandbox must not see.
        from durable_tools.sources import (
            OpenApiProvider,
            ProviderRefresher,
            attach_mcp,
            http_tool,
        )

        registry = base
        if registry is None:
            try:
                registry = load_registry(self.tools) if self.tools else ToolRegistry()
            except ValueError as error:
                raise ProjectError(f"tools: {error}") from None
        for server in self.mcp:
            await attach_mcp(
                registry,
                _mcp_server(server, self.root),
                prefix=server.name,
                include=server.include,
                exclude=server.exclude,
                secrets=secrets,
                **server.options.options(),
            )
        refreshers: list[ProviderRefresher] = []
        for document in self.openapi:
            where = document.document
            refresher = ProviderRefresher(
                registry,
                [
                    OpenApiProvider(
                        where if where.startswith(("http://", "https://")) else self.root / where,
                        base_url=document.base_url,
                        prefix=document.prefix,
                        include=document.include,
                        exclude=document.exclude,
                        auth=_http_auth(document.auth),
                        headers=document.headers,
                        defaults=document.options.options(),
                    )
                ],
                every=document.refresh_seconds,
            )
            await refresher.attach()
            refreshers.append(refresher)
        self._refreshers = refreshers
        for endpoint in self.http:
            http_tool(
                registry,
                name=endpoint.name,
                method=endpoint.method,
                url_template=endpoint.url,
                input_schema=endpoint.input_schema,
                description=endpoint.description,
                auth=_http_auth(endpoint.auth),
                headers=endpoint.headers,
                query=endpoint.query,
                **endpoint.options.options(),
            )
        return registry

    @property
    def refreshers(self) -> list[ProviderRefresher]:
        """One `ProviderRefresher` per OpenAPI document, made by the last `registry()`:
        run them while the worker runs (`async with refresher:`; `durable-tools worker`
        does) so that documents with `refresh_seconds` are read again on their schedule;
        `refresh()` reads one at once."""
        return list(self._refreshers)

    async def plugin(self, base: ToolRegistry | None = None, **options: Any) -> DurableToolsPlugin:
        """A `DurableToolsPlugin` for the project's tools, identity rule and model limits;
        secrets from `DURABLE_TOOLS_SECRET_*` unless `options` gives `secrets=`, and any
        other `options` of the plugin over the file's."""
        secrets = options.pop("secrets") if "secrets" in options else secrets_from_env()
        settings: dict[str, Any] = {
            "require_identity": self.worker.require_identity,
            "model_limits": dict(self.worker.model_limits) or None,
            **options,
        }
        registry = await self.registry(base, secrets=secrets)
        settings.setdefault("refreshers", self.refreshers)
        return DurableToolsPlugin(registry, secrets=secrets, **settings)


def load_project(path: str | Path) -> Project:
    """Read and check a project file.

    Raises:
        ProjectError: it cannot be read, is not TOML, or breaks the schema (the message
            names the file and each offending key).
    """
    file = Path(path)
    raw = _read(file)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ProjectError(f"{file}: not valid TOML: {error}") from None
    except RecursionError:
        raise ProjectError(f"{file}: nested deeper than {_MAX_DEPTH} levels") from None
    if (problem := _unfit_value(data) or _strict_tables(data)) is not None:
        raise ProjectError(f"{file}: {problem}")
    try:
        project = Project.model_validate(data)
    except ValidationError as error:
        raise ProjectError(f"{file}: {_problems(error)}") from None
    project._root = file.resolve().parent
    for key, place in project._paths():
        if not (project.root / place).resolve().is_relative_to(project.root):
            raise ProjectError(
                f"{file}: {key}: must be a path inside the project's folder (it leaves it "
                "through a symbolic link)"
            )
    return project


def _read(file: Path) -> bytes:
    """The file's bytes, at most `MAX_PROJECT_BYTES + 1` of them.

    Opened without blocking and checked before it is read: a FIFO (or a socket) would wait
    for a writer, hanging the worker or the command that reads its project.
    """
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise ProjectError(f"cannot read project file {file}: {error.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ProjectError(f"cannot read project file {file}: Is a directory")
        if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
            raise ProjectError(f"cannot read project file {file}: not a regular file")
        with os.fdopen(os.dup(fd), "rb") as stream:
            raw = stream.read(MAX_PROJECT_BYTES + 1)
    except OSError as error:
        raise ProjectError(f"cannot read project file {file}: {error.strerror}") from None
    finally:
        os.close(fd)
    if raw is None or len(raw) > MAX_PROJECT_BYTES:  # None: a device with nothing to read
        raise ProjectError(f"{file}: larger than {MAX_PROJECT_BYTES:,} bytes")
    return raw


def _problems(error: ValidationError, table: str = "") -> str:
    """Each problem as `key.path: message` (under `table`, the key of the table validated),
    the given value never repeated (it may be a credential the file should not hold)."""
    return "; ".join(
        (".".join(map(str, ([table] if table else []) + list(e["loc"]))) or "(file)")
        + ": "
        + e["msg"].removeprefix("Value error, ")
        for e in error.errors()[:10]
    )


def _unfit_value(data: Any) -> str | None:
    """What is wrong with the parsed file before its schema is checked, naming the key: a
    value nested deeper than `_MAX_DEPTH`, or an infinite or NaN number (TOML has both).
    Walked without recursion, so no nesting can exhaust the stack."""
    pending: list[tuple[Any, str, int]] = [(data, "", 0)]
    while pending:
        value, where, depth = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where or '(file)'}: a number must be finite (no inf or nan)"
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        if depth >= _MAX_DEPTH:
            return f"{where or '(file)'}: nested deeper than {_MAX_DEPTH} levels"
        pending.extend(
            (item, f"{where}.{key}" if where else str(key), depth + 1)
            for key, item in reversed(list(items))
        )
    return None


def _strict_tables(data: dict[str, Any]) -> str | None:
    """The problems of the tables validated by the library's own models (`[policy]`,
    `[limits]`, `[worker.model_limits.*]`), checked strictly as the rest of the file: TOML's
    types kept (no `"5"` or `true` for a number). Validated as JSON, where a string may be
    a literal and a list a tuple; the models stay lax for Python callers."""
    worker = data.get("worker")
    limits = worker.get("model_limits") if isinstance(worker, dict) else None
    tables: list[tuple[str, type[BaseModel], Any]] = [
        ("policy", ApprovalPolicy, data.get("policy")),
        ("limits", Limits, data.get("limits")),
    ]
    if isinstance(limits, dict):
        tables += [(f"worker.model_limits.{k}", ModelLimits, v) for k, v in limits.items()]
    for key, model, table in tables:
        if not isinstance(table, dict):
            continue  # absent, or the schema names the wrong type
        try:
            model.model_validate_json(json.dumps(table, default=str), strict=True)
        except ValidationError as error:
            return _problems(error, key)
    return None


def _inside(key: str, path: str) -> None:
    """Refuse a path that is absolute or climbs out of the project's folder (by its text;
    `load_project` then resolves symbolic links against the folder)."""
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or "\x00" in path or re.match(r"^[A-Za-z]:", path):
        raise ValueError(f"`{key}` must be a path inside the project's folder, got {path[:80]!r}")


def _no_url_credentials(key: str, url: str) -> None:
    """Refuse a credential written into a URL: a `user:password@` or a query parameter named
    like one. The URL is never repeated (the message names the key)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"`{key}` is not a valid URL") from None
    if "@" in parts.netloc:
        raise ValueError(
            f"`{key}` holds a user name or password (`user:password@`): give the credential "
            'as a header or `auth` with { secret = "NAME" }, never in the URL'
        )
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if _CREDENTIAL.search(name):
            raise ValueError(
                f"`{key}` has a query parameter named like a credential: give it as "
                'auth = { kind = "query", name = "...", secret = "NAME" }, never in the URL'
            )


def _no_inline_credentials(key: str, values: Mapping[str, object]) -> None:
    """Refuse a credential written into the file: a header or variable named like one must
    be `{ secret = "name" }`."""
    for name, value in values.items():
        if isinstance(value, str) and _CREDENTIAL.search(name):
            raise ValueError(
                f"`{key}.{name}` looks like a credential: write it as "
                '{ secret = "NAME" } (the worker\'s DURABLE_TOOLS_SECRET_<NAME>), never inline'
            )


def _mcp_server(source: McpSource, root: Path) -> Any:
    from durable_tools.sources import FromSecret, McpHttp, McpStdio

    def value(given: str | SecretRef) -> str | FromSecret:
        return given if isinstance(given, str) else FromSecret(given.secret, given.template)

    if source.url is not None:
        return McpHttp(
            url=source.url,
            headers={k: value(v) for k, v in source.headers.items()},
            name=source.name,
            timeout=source.timeout_seconds,
            elicitation=source.elicitation,
        )
    assert source.command is not None
    return McpStdio(
        command=source.command,
        args=tuple(source.args),
        env={k: value(v) for k, v in source.env.items()},
        cwd=str(root / source.cwd) if source.cwd else None,
        name=source.name,
        elicitation=source.elicitation,
    )


def _http_auth(auth: HttpAuthRef | None) -> Any:
    from durable_tools.sources import BearerSecret, HeaderSecret, QuerySecret

    if auth is None:
        return None
    if auth.kind == "bearer":
        return BearerSecret(auth.secret)
    assert auth.name is not None
    if auth.kind == "header":
        return HeaderSecret(auth.name, auth.secret, prefix=auth.prefix)
    return QuerySecret(auth.name, auth.secret)
