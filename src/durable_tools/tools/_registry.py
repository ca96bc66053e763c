"""The tool registry: define tools from plain functions, list them, and run them.

Registration checks everything up front (see `_options`), so a mistake fails the
worker at start-up instead of a run. The registry keeps the worker-side half of each
tool; only the `ToolSpec` half ever crosses into a workflow. What a registration of a
sub-agent, a flow or a callback tool is lives in `_delegated`; one call of a tool (its
hooks, events and checks) in `_invoke`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from datetime import timedelta
from typing import Any, TypeVar, overload

from pydantic import BaseModel
from typing_extensions import Unpack

from ._catalog import IDENTITY_PARTS, filter_specs, require_identity, search_specs
from ._context import Identity, ToolContext
from ._delegated import (
    DelegatedTool,
    callback_registration,
    flow_registration,
    subagent_registration,
)
from ._errors import ToolNotFound
from ._events import TOOL_REPLACED, TOOL_WITHDRAWN, EventBus, EventListener, ToolEvent, deliver
from ._invoke import invoke_tool
from ._names import NameStyle, ToolRegistrationError
from ._options import ToolOptions, build_tool
from ._registered import ApprovalPredicate, RegisteredTool
from ._results import ToolResult
from ._schema_tools import SchemaHandler
from ._spec import LoadingMode, ToolSpec
from ._validation import parse_arguments

# RegisteredTool, ToolOptions and ApprovalPredicate are re-exported: callers think of
# them as parts of the registry.
__all__ = ["ApprovalPredicate", "RegisteredTool", "ToolOptions", "ToolRegistry"]

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger("durable_tools.tools")

_COMPARED = ("input_schema", "description", "output_schema", "approval", "safety", "policy")
"""The spec fields a `tool.replaced` event names when they changed."""


class ToolRegistry:
    """The tools a worker offers.

    Args:
        name_style: `snake_case` (default) or `provider` (`^[a-zA-Z0-9_-]{1,64}$`).
        max_name_length: Longest tool name.
        validate_outputs: Check structured results against the tool's output schema
            (for tools whose `validate` asks for it); False turns output checks off.
        require_full_identity: Refuse to serve a catalog (`catalog()`, and so a run's
            start) unless the identity names a user, a tenant and a session.
    """

    def __init__(
        self,
        *,
        name_style: NameStyle = "snake_case",
        max_name_length: int = 64,
        validate_outputs: bool = True,
        require_full_identity: bool = False,
    ) -> None:
        self.name_style: NameStyle = name_style
        self.max_name_length = max_name_length
        self.validate_outputs = validate_outputs
        self.require_full_identity = require_full_identity
        # Copy-on-write: writers replace the dicts under the lock, readers take a
        # snapshot reference and never see a half-made change.
        self._tools: dict[str, RegisteredTool] = {}
        self._aliases: dict[tuple[str, str], str] = {}
        self._middleware: tuple[object, ...] = ()
        self._withdrawn: frozenset[str] = frozenset()
        self._sum = 0  # of `_tool_digest` over the tools: see `version`
        self._lock = threading.Lock()
        self.events = EventBus()

    # ----------------------------------------------------------------- defining

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(self, fn: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def tool(self, fn: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
        """Register a function as a tool: `@registry.tool` or `@registry.tool(name=...)`.

        The decorated function is returned unchanged, so it stays callable in tests.
        """
        if fn is not None:
            self.register(fn, **options)
            return fn

        def decorate(func: F) -> F:
            self.register(func, **options)
            return func

        return decorate

    def register(
        self, fn: Callable[..., Any], *, replace: bool = False, **options: Unpack[ToolOptions]
    ) -> RegisteredTool:
        """Register `fn` as a tool and return the registered tool.

        Args:
            fn: The tool's function.
            replace: Replace a tool already registered under the name (its function,
                schema, aliases and options) instead of refusing the duplicate. The
                registry emits `tool.replaced` (and logs it); runs already going see the
                new tool from their next model turn (docs/tools.md, "Changing tools
                while runs wait").
            **options: `ToolOptions`.

        Raises:
            ToolRegistrationError: a bad name or alias, a duplicate (without `replace`),
                an unsupported signature, a strict schema that cannot be expressed, an
                example that breaks the schema, or invalid options. `rule` says which.
        """
        tool = build_tool(
            fn, options, name_style=self.name_style, max_name_length=self.max_name_length
        )
        if tool.spec.source is None:
            where = f"python:{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
            tool = dataclasses.replace(tool, spec=tool.spec.model_copy(update={"source": where}))
        self._add(tool, replace=replace)
        return tool

    def register_schema(
        self,
        handler: SchemaHandler,
        *,
        input_schema: Mapping[str, Any],
        replace: bool = False,
        **options: Unpack[ToolOptions],
    ) -> RegisteredTool:
        """Register a tool whose JSON Schema is given (MCP, OpenAPI, HTTP tools).

        The handler is called as `handler(arguments=<validated dict>, ctx=<ToolContext>)`,
        sync or async. Everything else (safety, policy, approval, `replace`, ...) is as for
        `register`.

        Raises:
            ToolRegistrationError: as for `register`, or `rule="schema"` for a schema that
                is not a valid JSON Schema of an object.
        """
        if "name" not in options:
            raise ToolRegistrationError(
                "register_schema needs name=: a schema-given tool has no function name to use",
                rule="empty",
            )
        tool = build_tool(
            handler,
            {**options, "input_schema": dict(input_schema)},
            name_style=self.name_style,
            max_name_length=self.max_name_length,
        )
        self._add(tool, replace=replace)
        return tool

    def subagent(
        self, config: Mapping[str, Any] | Any, **options: Unpack[ToolOptions]
    ) -> RegisteredTool:
        """Register a sub-agent: a tool that runs a child agent and answers with its result.

        The model calls it with `{"task": "..."}`; the run starts the child agent as a child
        workflow (its own instructions, model and tools) and gives the model the child's
        final answer. Sub-agents of sub-agents are hidden unless the run's depth limit
        allows them (`AgentConfig.max_subagent_depth`).

        Args:
            config: The child's `AgentConfig` (or its JSON form).
            **options: As for `register`; `name=` is required and `description=` should
                say what the sub-agent is good for (the model reads it).
                `start_to_close_timeout` (or `schedule_to_close_timeout`) bounds the child
                run, `task_queue` picks its workers; `retry`, `heartbeat_timeout`,
                `max_concurrent`, `rate_limit` and `local` mean nothing for a child workflow.

        Raises:
            ToolRegistrationError: no `name=`, a config without a model, or an option a
                child workflow cannot honour (`rule="options"`, naming it and why).
        """
        return self._register_delegated(subagent_registration(config, options))

    def flow(
        self,
        name: str,
        description: str,
        /,
        *,
        nodes: Mapping[str, Any],
        edges: Iterable[tuple[str, str]] = (),
        output: str | Mapping[str, str] | None = None,
        input_schema: Mapping[str, Any] | None = None,
        timeout: float | timedelta = 300.0,
        node_output_limit_bytes: int = 64_000,
        **options: Unpack[ToolOptions],
    ) -> RegisteredTool:
        """Register a flow: a graph of calls of registered tools, offered as one tool.

        The flow runs as a child workflow; each node is its tool's own activity with its
        own policy; independent nodes run concurrently; the model sees one result. It is
        validated here: unknown tools, parameters and references, cycles and types that
        cannot line up raise, naming the node (see `durable_tools.flows`).

        Args:
            name: The flow tool's name.
            description: What the model reads.
            nodes: Node id -> `FlowNode(tool=..., arguments={param: literal, "$args.x" or
                "$nodes.<id>.output[.field]"}, policy=...)` or its dict form.
            edges: Extra `(before, after)` orderings between nodes that pass no data.
            output: What the model sees: a node id, a `$nodes.<id>.output.field`
                reference, or names -> either (a JSON object). Default: the one node no
                other reads, else an object of all such nodes' outputs.
            input_schema: The flow's arguments; default: derived from the `$args.x`
                references (each takes the schema of the parameter it feeds).
            timeout: The whole flow's bound, in seconds.
            node_output_limit_bytes: Largest output a node may pass to another node.
            **options: As for `register` (tags, loading, approval, ...). The safety flags
                and auth scopes are the nodes' combined; a node needing approval makes
                the flow need it. Activity options (timeouts, retry, task queue, limits)
                are refused: `timeout` bounds the flow, and each node runs under its own
                tool's policy.

        Raises:
            ToolRegistrationError: `rule="flow"` for a flow that does not validate,
                `rule="options"` for an option a flow call cannot honour.
        """
        delegated = flow_registration(
            name,
            description,
            tools=self._tools,
            nodes=nodes,
            edges=edges,
            output=output,
            input_schema=input_schema,
            timeout=timeout,
            node_output_limit_bytes=node_output_limit_bytes,
            options=options,
        )
        return self._register_delegated(delegated)

    def callback_tool(
        self,
        name: str,
        /,
        *,
        parameters: Mapping[str, Any] | type[BaseModel] | None = None,
        output: Mapping[str, Any] | type[BaseModel] | None = None,
        timeout: float | timedelta = 300.0,
        **options: Unpack[ToolOptions],
    ) -> RegisteredTool:
        """Declare a callback tool: a schema, no worker body; a client runs it.

        A call passes validation and the approval and authorization gates like any
        other; then, instead of an activity, the run publishes the call and waits
        durably for a client attached to it (`AgentRun.serve_callbacks`, or
        `durable-tools callbacks serve`) to run the tool on its own machine and send the
        result back, checked against `output`. No answer within `timeout` is a timeout
        error the model sees.

        Args:
            name: The tool's name.
            parameters: JSON Schema of the arguments, or a pydantic model (default: no
                arguments).
            output: JSON Schema of the result, or a pydantic model; None accepts any JSON.
            timeout: Seconds (or a timedelta) the run waits for a client, per call.
            **options: As for `register`: `description=` (what the model reads to decide
                when to call it), safety, approval, tags, loading, ...
        """
        delegated = callback_registration(
            name, parameters=parameters, output=output, timeout=timeout, options=options
        )
        return self._register_delegated(delegated)

    def _register_delegated(self, delegated: DelegatedTool) -> RegisteredTool:
        """Register a tool the run carries out itself, then stamp its spec."""
        tool = self.register_schema(
            delegated.handler, input_schema=delegated.input_schema, **delegated.options
        )
        with self._lock:
            update = delegated.spec_update
            stamped = dataclasses.replace(tool, spec=tool.spec.model_copy(update=update))
            self._sum -= _tool_digest(tool, withdrawn=False)
            self._sum = (self._sum + _tool_digest(stamped, withdrawn=False)) % _MODULUS
            self._tools = {**self._tools, delegated.name: stamped}
        return stamped

    def _add(self, tool: RegisteredTool, *, replace: bool = False) -> None:
        name = tool.spec.name
        with self._lock:
            old = self._tools.get(name)
            if old is not None and not replace:
                raise ToolRegistrationError(
                    f"tool name {name!r} is invalid: duplicate, a tool of that name is "
                    "already registered (pass replace=True to replace it)",
                    rule="duplicate",
                    tool_name=name,
                )
            # The tool replaced gives up its aliases: the new registration brings its own.
            aliases = {k: v for k, v in self._aliases.items() if v != name}
            others = {k: v for k, v in self._tools.items() if k != name}
            pairs = {(provider, alias) for provider, alias in tool.spec.aliases.items()}
            _check_alias_names(name, pairs, others, aliases)
            taken = pairs & aliases.keys()
            if taken:
                provider, alias = sorted(taken)[0]
                raise ToolRegistrationError(
                    f"alias {alias!r} for {provider!r} of tool {name!r} is invalid: duplicate, "
                    f"tool {aliases[(provider, alias)]!r} already uses it",
                    rule="duplicate",
                    tool_name=name,
                )
            if old is not None:
                self._sum -= _tool_digest(old, withdrawn=name in self._withdrawn)
            self._sum = (self._sum + _tool_digest(tool, withdrawn=False)) % _MODULUS
            self._tools = {**self._tools, name: tool}
            self._aliases = {**aliases, **{pair: name for pair in pairs}}
            self._withdrawn = self._withdrawn - {name}
        if old is not None:
            self._replaced(old, tool)

    def _replaced(self, old: RegisteredTool, new: RegisteredTool) -> None:
        """Say that `old` was replaced, and what changed (field names, never values)."""
        changed = [f for f in _COMPARED if getattr(old.spec, f) != getattr(new.spec, f)]
        if old.fn is not new.fn:
            changed.append("function")
        log.info("tool %s replaced (%s)", new.spec.name, ", ".join(changed) or "nothing changed")
        self.events.emit_now(
            ToolEvent(
                name=TOOL_REPLACED,
                tool_name=new.spec.name,
                message=f"tool {new.spec.name!r} replaced",
                details={
                    "changed": changed,
                    "old_source": old.spec.source,
                    "source": new.spec.source,
                },
            )
        )

    def withdraw(self, name: str, *, reason: str = "its source no longer offers it") -> bool:
        """Hide a tool from catalogs (new runs, and running runs from their next model
        turn) while keeping it registered, so a call from a run that still lists it reaches
        its function and gets a clear error from it. A later registration with `replace`
        brings it back. Emits `tool.withdrawn`.

        Returns:
            True when the tool was offered until now; False when it was withdrawn already.

        Raises:
            ToolNotFound: no such tool.
        """
        with self._lock:
            if name not in self._tools:
                raise ToolNotFound(f"no tool named {name!r} is registered", details={"tool": name})
            if name in self._withdrawn:
                return False
            tool = self._tools[name]
            self._sum -= _tool_digest(tool, withdrawn=False)
            self._sum = (self._sum + _tool_digest(tool, withdrawn=True)) % _MODULUS
            self._withdrawn = self._withdrawn | {name}
        log.info("tool %s withdrawn: %s", name, reason)
        self.events.emit_now(
            ToolEvent(name=TOOL_WITHDRAWN, tool_name=name, message=f"tool {name!r} {reason}")
        )
        return True

    def is_withdrawn(self, name: str) -> bool:
        """Whether the tool is registered but withdrawn (see `withdraw`)."""
        return name in self._withdrawn

    def version(self) -> str:
        """A digest of what the registry offers: every spec, and which tools are withdrawn.

        Two workers with the same tools give the same version. A run records the version
        its catalog came from; when a worker reports another one, the run reads its
        catalog again before its next model turn. Kept up to date at each change (a sum
        of each tool's own digest), so reading it costs nothing however many tools there
        are and however often they change.
        """
        return f"{self._sum:064x}"[:16]  # 64 bits: a change detector, sent each turn

    # ------------------------------------------------------------ hooks and events

    def use(self, middleware: object) -> None:
        """Add a middleware: an object with optional `before`/`after` hooks."""
        if not (hasattr(middleware, "before") or hasattr(middleware, "after")):
            raise TypeError("a middleware needs a before(call) or an after(call, result) method")
        with self._lock:
            self._middleware = (*self._middleware, middleware)

    def on(self, event: str, listener: EventListener) -> EventListener:
        """Call `listener` for each `event` (a `tool.*` name, or `*` for all)."""
        return self.events.on(event, listener)

    async def emit(self, event: ToolEvent) -> None:
        """Deliver an event to listeners and to middlewares with an `on_event` method."""
        await self.events.emit(event)
        for middleware in self._middleware:
            hook = getattr(middleware, "on_event", None)
            if hook is not None:
                await deliver(hook, event)

    # ------------------------------------------------------------------ reading

    def get(self, name: str, *, provider: str | None = None) -> RegisteredTool:
        """A registered tool by name (or by its alias for `provider`).

        Raises:
            ToolNotFound: no such tool.
        """
        tools = self._tools
        found = tools.get(name)
        if found is None and provider is not None:
            canonical = self._aliases.get((provider, name))
            found = tools.get(canonical) if canonical else None
        if found is None:
            raise ToolNotFound(f"no tool named {name!r} is registered", details={"tool": name})
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(list(self._tools.values()))

    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def tools(self) -> list[RegisteredTool]:
        """Registered tools, in registration order."""
        return list(self._tools.values())

    def specs(self) -> list[ToolSpec]:
        """Every spec, unfiltered, in registration order."""
        return [tool.spec for tool in self._tools.values()]

    def catalog(
        self,
        *,
        identity: Identity | None = None,
        granted_scopes: Collection[str] | None = None,
        loading: LoadingMode | str | None = None,
        pattern: str | None = None,
        transport: str | None = None,
        source: str | None = None,
        mime_type: str | None = None,
        tag: str | None = None,
    ) -> list[ToolSpec]:
        """The specs a run may see.

        Args:
            identity: Who the run acts for; tools whose `visible_to` rule rejects it are hidden.
            granted_scopes: The run's scopes; a tool needing any other scope is hidden.
                None grants none (fail closed).
            loading: Only tools of this loading mode.
            pattern: A glob over names.
            transport: Only tools reached this way (`function`, `mcp`, `http`, `sub-agent`).
            source: A glob over the tools' `source`.
            mime_type: Only tools handling this MIME type.
            tag: Only tools with this tag.

        Raises:
            IdentityIncomplete: the registry has `require_full_identity` and `identity`
                lacks a user, a tenant or a session.
        """
        if self.require_full_identity:
            require_identity(identity, IDENTITY_PARTS, "this registry")
        withdrawn = self._withdrawn
        visible = [
            t.spec
            for t in self._tools.values()
            if t.name not in withdrawn and t.is_visible_to(identity)
        ]
        return filter_specs(
            visible,
            granted_scopes=granted_scopes,
            loading=loading,
            pattern=pattern,
            transport=transport,
            source=source,
            mime_type=mime_type,
            tag=tag,
        )

    def search(
        self,
        query: str = "",
        *,
        limit: int = 5,
        identity: Identity | None = None,
        granted_scopes: Collection[str] | None = None,
        tags: Collection[str] = (),
    ) -> list[ToolSpec]:
        """Deferred tools matching `query`, best first, among those the run may see.

        Args:
            query: Free text over names, tags, descriptions and parameters (BM25, as the
                model's `search_tools`); empty: every tool `tags` selects, in catalog order.
            limit: Most results.
            identity: The run's identity, for tools visible to some identities only.
            granted_scopes: The run's scopes, for tools that need some.
            tags: Only tools carrying every one of these tags (compared exactly).
        """
        wanted = {tags} if isinstance(tags, str) else set(tags)
        candidates = [
            spec
            for spec in self.catalog(
                identity=identity, granted_scopes=granted_scopes, loading=LoadingMode.DEFERRED
            )
            if wanted <= set(spec.tags)
        ]
        if not query.strip():
            return candidates[:limit] if tags else []
        return search_specs(candidates, query, limit=limit)

    def requires_approval(self, name: str, args: Mapping[str, Any] | str) -> bool:
        """Whether a call of `name` with `args` needs a person's approval.

        Raises:
            ToolNotFound: no such tool.
            InvalidArguments: `args` is text that is not a JSON object.
        """
        tool = self.get(name)
        return tool.requires_approval(parse_arguments(args))

    # ---------------------------------------------------------------- executing

    @property
    def has_before_hooks(self) -> bool:
        """Whether any middleware has a before-hook."""
        return any(getattr(m, "before", None) is not None for m in self._middleware)

    async def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        context: ToolContext,
        *,
        run_before_hooks: bool = True,
        bound_schema: str | None = None,
        bound_safety: str | None = None,
    ) -> ToolResult:
        """Validate, inject, run hooks and the tool, and return its result.

        Before-hooks run once per call: the tool activity passes `run_before_hooks` only on
        a call's first attempt. So that a retry never skips hooks that did not pass, a
        failure before the tool body starts on an attempt that runs them (a hook raising,
        an argument that cannot be injected) is made final (`retryable=False`). A skip
        completes the call, so it is never retried either; it emits `tool.skipped`, not
        `tool.started`/`tool.completed`, and its result is an error the model reads.

        Args:
            name: The tool.
            arguments: JSON text or a mapping.
            context: The call's context.
            run_before_hooks: False on a retry attempt of a call whose hooks already passed.
            bound_schema: `schema_digest` of the input schema a person approved the call
                under (the tool activity passes it for approved calls): when the tool was
                replaced since with another schema, the approved arguments run as they
                are, not checked against the new schema.
            bound_safety: `safety_digest` of the tool a person approved the call for:
                when the tool's safety metadata changed since, the call never runs
                (`Denied`).

        Raises:
            ToolNotFound: no such tool.
            InvalidArguments: malformed or invalid arguments; the tool did not run.
            Denied: the tool changed since the call was approved (`bound_safety`); it
                did not run.
            ToolError: the tool (or a hook) failed, classified by `classify_exception`.
        """
        return await invoke_tool(
            self.get(name),
            arguments,
            context,
            middleware=self._middleware,
            emit=self.emit,
            validate_outputs=self.validate_outputs,
            run_before_hooks=run_before_hooks,
            bound_schema=bound_schema,
            bound_safety=bound_safety,
        )


_MODULUS = 1 << 256


def _tool_digest(tool: RegisteredTool, *, withdrawn: bool) -> int:
    """One tool's part of the registry's version: its spec, and whether it is withdrawn."""
    digest = hashlib.sha256(tool.spec.model_dump_json().encode())
    digest.update(b"\x00withdrawn" if withdrawn else b"\x00")
    return int.from_bytes(digest.digest(), "big")


def _check_alias_names(
    name: str,
    pairs: set[tuple[str, str]],
    tools: Mapping[str, RegisteredTool],
    aliases: Mapping[tuple[str, str], str],
) -> None:
    """Refuse a tool name that is another tool's alias, or an alias that is another
    tool's name: a call by that name would be ambiguous (the workflow takes a name before
    an alias, so the alias could never be called)."""
    for (provider, alias), owner in aliases.items():
        if alias == name:
            raise ToolRegistrationError(
                f"tool name {name!r} is invalid: tool {owner!r} uses it as its alias for "
                f"{provider!r}",
                rule="duplicate",
                tool_name=name,
            )
    for provider, alias in sorted(pairs):
        if alias != name and alias in tools:
            raise ToolRegistrationError(
                f"alias {alias!r} for {provider!r} of tool {name!r} is invalid: a tool of "
                "that name is registered",
                rule="duplicate",
                tool_name=name,
            )
