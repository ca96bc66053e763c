"""A2A remote agents as a tool source: each skill of an agent (or the agent) becomes a tool.

Discovery runs on the worker, at start-up: `await attach_a2a(registry, card_url)` reads
the agent card (the official `a2a-sdk`'s `A2ACardResolver`) and registers one tool per
skill, or one for the whole agent. Every tool is an activity of its own; a call sends
one A2A message and follows the task it starts (see `_a2a_call`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import httpx
from typing_extensions import Unpack

from durable_tools._extras import MissingExtraError, install_hint
from durable_tools.tools import (
    RegisteredTool,
    ToolContext,
    ToolOptions,
    ToolRegistrationError,
    ToolRegistry,
)

from ._http_auth import HttpAuth, as_auth_list
from ._mcp import _selected, mcp_tool_name

# The A2A SDK is the optional `a2a` extra: without it this package still imports (its
# other sources work) and attaching an agent says what to install.
try:
    from a2a.client import A2ACardResolver, AgentCardResolutionError

    from ._a2a_call import A2AAgent, call_agent
except ImportError as _error:  # pragma: no cover - exercised only without the extra
    _MISSING_SDK: ImportError | None = _error
else:
    _MISSING_SDK = None

if TYPE_CHECKING:
    from a2a.types import AgentCard, AgentSkill

__all__ = ["A2AError", "a2a_tool_name", "attach_a2a", "attach_a2a_sync"]

A2AMode = Literal["skills", "agent"]
_WELL_KNOWN = "/.well-known/agent-card.json"
_NOT_DEFAULTS = frozenset({"name", "aliases", "examples"})


class A2AError(Exception):
    """The agent card could not be read, or describes no usable agent."""


def a2a_tool_name(skill: str | None, *, prefix: str, max_length: int = 64) -> str:
    """The registry name of a skill's tool (`{prefix}__{skill}`), or of the agent's (`prefix`).

    Sanitized like MCP names: lower case, `[a-z0-9_]`, bounded with a hash suffix.
    """
    if skill is None:
        return mcp_tool_name(prefix, max_length=max_length)
    return mcp_tool_name(skill, prefix=prefix, max_length=max_length)


def _input_schema(skills: Sequence[AgentSkill]) -> dict[str, Any]:
    examples = [e for skill in skills for e in skill.examples][:3]
    message: dict[str, Any] = {
        "type": "string",
        "minLength": 1,
        "description": "What to ask the agent, in plain language.",
    }
    if examples:
        message["examples"] = examples
    return {
        "type": "object",
        "properties": {
            "message": message,
            "data": {
                "type": "object",
                "description": "Structured input for the agent, sent beside the message.",
            },
            "task_id": {
                "type": "string",
                "description": "Continue this earlier task of the agent (one that asked "
                "for more input); leave out to start a new task.",
            },
            "context_id": {
                "type": "string",
                "description": "The conversation the earlier task belongs to.",
            },
        },
        "required": ["message"],
        "additionalProperties": False,
    }


def _skill_description(card: AgentCard, skill: AgentSkill) -> str:
    text = skill.description or skill.name or skill.id
    return f"{text} (skill {skill.id!r} of the A2A agent {card.name!r})"


def _agent_description(card: AgentCard) -> str:
    lines = [card.description or f"The A2A agent {card.name!r}."]
    if card.skills:
        lines.append("Its skills:")
        lines.extend(f"- {s.name or s.id}: {s.description}" for s in card.skills)
    return "\n".join(lines)


def _split_card_url(card_url: str) -> tuple[str, str]:
    """(base URL, card path) for the resolver; a bare base URL gets the well-known path."""
    url = httpx.URL(card_url)
    if url.path.endswith(".json"):
        return str(url.copy_with(path="/", query=None)).rstrip("/"), url.path
    return card_url.rstrip("/"), _WELL_KNOWN


async def fetch_card(
    card_url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 30.0
) -> AgentCard:
    """Read an agent card with the SDK's resolver.

    Raises:
        A2AError: the card cannot be fetched or parsed, or the SDK is not installed.
    """
    if _MISSING_SDK is not None:
        needs = f"A2A agents need the a2a-sdk: {install_hint('a2a')}"
        raise A2AError(needs) from MissingExtraError(needs)
    base, path = _split_card_url(card_url)
    async with httpx.AsyncClient(timeout=timeout, headers=dict(headers or {})) as http:
        try:
            return await A2ACardResolver(http, base, path).get_agent_card()
        except (AgentCardResolutionError, httpx.HTTPError) as exc:
            raise A2AError(f"could not read the agent card at {base}{path}: {exc}") from None


def _make_handler(agent: A2AAgent, skill: str | None, name: str) -> Any:
    async def call_a2a_agent(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return await call_agent(agent, skill, arguments, ctx)

    call_a2a_agent.__name__ = name
    call_a2a_agent.__qualname__ = name
    return call_a2a_agent


def _register(
    registry: ToolRegistry,
    card: AgentCard,
    agent: A2AAgent,
    *,
    prefix: str | None,
    mode: A2AMode,
    include: Collection[str] | None,
    exclude: Collection[str] | None,
    per_skill: Mapping[str, ToolOptions] | None,
    defaults: dict[str, Any],
) -> list[RegisteredTool]:
    if mode not in ("skills", "agent"):
        raise ToolRegistrationError(
            f"attach_a2a: mode must be 'skills' or 'agent', not {mode!r}", rule="options"
        )
    bad = _NOT_DEFAULTS & set(defaults) if mode == "skills" else set()
    if bad:
        raise ToolRegistrationError(
            f"attach_a2a: {', '.join(sorted(bad))} cannot apply to every skill; give it in "
            "per_skill",
            rule="options",
        )
    prefix = prefix or card.name or "agent"
    options: dict[str, Any] = {
        # A remote agent may do anything: nothing is assumed safe to repeat.
        "networked": True,
        "transport": "a2a",
        "tags": ("a2a", f"a2a:{prefix}"),
    }
    requirement = next((a.requirement() for a in agent.auth if a.requirement() is not None), None)
    if requirement is not None:
        options["oauth"] = requirement
    tools: list[RegisteredTool] = []
    if mode == "agent":
        tool_name = defaults.pop("name", None) or a2a_tool_name(
            None, prefix=prefix, max_length=registry.max_name_length
        )
        tools.append(
            registry.register_schema(
                _make_handler(agent, None, tool_name),
                input_schema=_input_schema(list(card.skills)),
                **{
                    **options,
                    "description": _agent_description(card),
                    "source": f"a2a:{card.name}",  # never the URL (tokens)
                    **defaults,
                    "name": tool_name,
                },
            )
        )
        return tools
    if not card.skills:
        raise A2AError(f"the agent {card.name!r} lists no skills; use mode='agent'")
    per_skill = dict(per_skill or {})
    for skill in card.skills:
        if not _selected(skill.id, include, exclude):
            continue
        tool_name = a2a_tool_name(skill.id, prefix=prefix, max_length=registry.max_name_length)
        tools.append(
            registry.register_schema(
                _make_handler(agent, skill.id, tool_name),
                input_schema=_input_schema([skill]),
                **{
                    **options,
                    "description": _skill_description(card, skill),
                    "source": f"a2a:{card.name}/{skill.id}",
                    **defaults,
                    **per_skill.get(skill.id, {}),
                    "name": tool_name,
                },
            )
        )
    return tools


def _agent(
    card: AgentCard,
    auth: HttpAuth | Sequence[HttpAuth] | None,
    *,
    streaming: bool,
    poll_interval: float,
    request_timeout: float,
    client: httpx.AsyncClient | None,
) -> A2AAgent:
    auths = as_auth_list(auth)
    for a in auths:
        if a.reserved_query():
            raise ToolRegistrationError(
                f"attach_a2a: {type(a).__name__} puts a secret in the URL; A2A takes "
                "credentials in headers (BearerSecret, HeaderSecret, OAuthBearer)",
                rule="options",
            )
    return A2AAgent(
        card=card,
        label=f"A2A agent {card.name!r}",
        auth=auths,
        streaming=streaming,
        poll_interval=poll_interval,
        request_timeout=request_timeout,
        client=client,
    )


async def attach_a2a(
    registry: ToolRegistry,
    card_url: str,
    *,
    prefix: str | None = None,
    mode: A2AMode = "skills",
    auth: HttpAuth | Sequence[HttpAuth] | None = None,
    include: Collection[str] | None = None,
    exclude: Collection[str] | None = None,
    per_skill: Mapping[str, ToolOptions] | None = None,
    streaming: bool = True,
    poll_interval: float = 1.0,
    request_timeout: float = 60.0,
    card_headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
    **defaults: Unpack[ToolOptions],
) -> list[RegisteredTool]:
    """Read a remote agent's card and register its skills (or the agent) as tools.

    Each tool takes `{"message": str, "data"?: object, "task_id"?: str, "context_id"?:
    str}`. A call sends one A2A message (with the skill id in its metadata) and follows
    the task: streamed status updates become the activity's heartbeat details, a task
    still working is polled with `GetTask`, and a cancelled call cancels the task. The
    tool's result is the text of the task's artifacts (data parts as JSON, files noted);
    a failed or rejected task is an error the model reads; a task that needs input
    returns the agent's question.

    Args:
        registry: Where the tools go.
        card_url: The agent's base URL (its card is at `/.well-known/agent-card.json`)
            or the full URL of its card.
        prefix: Tool-name prefix; defaults to the card's name (sanitized).
        mode: `"skills"`: one tool per skill, named `{prefix}__{skill id}`; `"agent"`: one
            tool for the agent, which picks a skill itself, named `name=` (a tool option)
            or `prefix`.
        auth: Worker-side credentials sent as headers on every request: `BearerSecret`
            (a worker secret), `HeaderSecret`, or `OAuthBearer` (the user's grant; the
            tools then declare `oauth=`).
        include: Skill ids (or glob patterns) to register; None for all.
        exclude: Skill ids (or glob patterns) to leave out.
        per_skill: `ToolOptions` by skill id (e.g. `{"deploy": {"approval": True}}`).
        streaming: Stream the task's updates when the agent can; False: poll.
        poll_interval: Seconds between `GetTask` polls of a task still working.
        request_timeout: Seconds one request (or a silent stream) may take.
        card_headers: Headers for fetching the card (most cards are public).
        client: An `httpx.AsyncClient` of your own for the calls (proxies, mTLS).
        **defaults: `ToolOptions` for every tool (`approval=True`,
            `start_to_close_timeout=600`, ...).

    Returns:
        The registered tools, in the card's order.

    Raises:
        A2AError: the card cannot be read, or lists no skills in skills mode.
        ToolRegistrationError: a tool cannot be registered (e.g. its name is taken).
    """
    card = await fetch_card(card_url, headers=card_headers, timeout=request_timeout)
    agent = _agent(
        card,
        auth,
        streaming=streaming,
        poll_interval=poll_interval,
        request_timeout=request_timeout,
        client=client,
    )
    return _register(
        registry,
        card,
        agent,
        prefix=prefix,
        mode=mode,
        include=include,
        exclude=exclude,
        per_skill=per_skill,
        defaults=dict(defaults),
    )


def attach_a2a_sync(
    registry: ToolRegistry,
    card_url: str,
    *,
    prefix: str | None = None,
    mode: A2AMode = "skills",
    auth: HttpAuth | Sequence[HttpAuth] | None = None,
    include: Collection[str] | None = None,
    exclude: Collection[str] | None = None,
    per_skill: Mapping[str, ToolOptions] | None = None,
    streaming: bool = True,
    poll_interval: float = 1.0,
    request_timeout: float = 60.0,
    card_headers: Mapping[str, str] | None = None,
    **defaults: Unpack[ToolOptions],
) -> list[RegisteredTool]:
    """`attach_a2a` for synchronous start-up code (a tools module, before the worker runs).

    Raises:
        RuntimeError: called from a running event loop; `await attach_a2a(...)` there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("attach_a2a_sync cannot run inside an event loop: await attach_a2a")
    card = asyncio.run(fetch_card(card_url, headers=card_headers, timeout=request_timeout))
    agent = _agent(
        card,
        auth,
        streaming=streaming,
        poll_interval=poll_interval,
        request_timeout=request_timeout,
        client=None,  # an httpx client belongs to one event loop: each call opens its own
    )
    return _register(
        registry,
        card,
        agent,
        prefix=prefix,
        mode=mode,
        include=include,
        exclude=exclude,
        per_skill=per_skill,
        defaults=dict(defaults),
    )
