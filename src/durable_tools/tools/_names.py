"""Tool names and aliases: which spellings a registry accepts, and why one is refused.

A tool's name is also its Temporal activity type and the name the model calls, so it
must satisfy every provider at once. Snake case is the default because it reads the
same in the Temporal UI, in logs and in the model's tool list.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Literal

__all__ = [
    "PROVIDER_KEY_PATTERN",
    "PROVIDER_NAME_PATTERN",
    "SNAKE_CASE_PATTERN",
    "NameStyle",
    "ToolRegistrationError",
    "alias_provider",
    "check_alias",
    "check_tool_name",
]

SNAKE_CASE_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
"""The default rule: ASCII lowercase letters, digits and underscores, starting with a letter."""

PROVIDER_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI and Anthropic both accept for a function or tool name."""

NameStyle = Literal["snake_case", "provider"]
"""`snake_case` (the default) or `provider` (anything OpenAI and Anthropic accept)."""

PROVIDER_KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
"""A key of `ToolSpec.aliases`: what `alias_provider` returns for some model spec."""

MAX_NAME_LENGTH = 64

_SAME_PROVIDER = MappingProxyType(
    {"openai-responses": "openai", "google-gla": "google", "google-vertex": "google"}
)
"""Model spec prefixes (and pydantic-ai providers) whose models share another's aliases."""


class ToolRegistrationError(ValueError):
    """A tool cannot be registered as declared.

    Raised at registration, never at call time, so a bad tool fails the worker's
    start-up instead of a run.

    Args:
        message: What is wrong and how to fix it.
        rule: A short stable identifier of the broken rule (`empty`, `too_long`,
            `pattern`, `duplicate`, `example`, `signature`, `strict`, ...).
        tool_name: The tool concerned, when known.
    """

    def __init__(self, message: str, *, rule: str, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.tool_name = tool_name


def check_tool_name(
    name: str, *, style: NameStyle = "snake_case", max_length: int = MAX_NAME_LENGTH
) -> None:
    """Check a tool name against the registry's naming rule.

    Args:
        name: The proposed name.
        style: `snake_case` or `provider`.
        max_length: Longest name allowed; providers refuse more than 64 characters.

    Raises:
        ToolRegistrationError: with `rule` set to the first rule the name breaks.
    """
    _check(name, what="tool name", style=style, max_length=max_length, tool_name=name)


def check_alias(alias: str, *, provider: str, tool_name: str) -> None:
    """Check a provider-specific alias: it must be a name the providers accept.

    Args:
        alias: The alias, e.g. `getWeather`.
        provider: Which provider the alias is for, e.g. `anthropic`.
        tool_name: The tool the alias belongs to, for the error message.

    Raises:
        ToolRegistrationError: with `rule` set to the first rule the alias breaks.
    """
    if not isinstance(provider, str) or not PROVIDER_KEY_PATTERN.match(provider):
        raise ToolRegistrationError(
            f"tool {tool_name!r}: alias {alias!r} has the provider key {provider!r}; a "
            "provider key is a model spec prefix in lowercase (`openai`, `anthropic`, "
            "`google`, `scripted`, a pydantic-ai provider or a registered prefix): see "
            "`alias_provider`",
            rule="alias",
            tool_name=tool_name,
        )
    _check(
        alias,
        what=f"alias for {provider!r} of tool {tool_name!r}",
        style="provider",
        max_length=MAX_NAME_LENGTH,
        tool_name=tool_name,
    )


def _check(name: str, *, what: str, style: NameStyle, max_length: int, tool_name: str) -> None:
    # Rules are checked from the most to the least specific, so the message names the
    # actual mistake ("contains whitespace") instead of a regex the user must decode.
    def fail(rule: str, why: str) -> ToolRegistrationError:
        return ToolRegistrationError(
            f"{what} {name!r} is invalid: {why}", rule=rule, tool_name=tool_name
        )

    if not isinstance(name, str):
        raise fail("type", f"expected a string, got {type(name).__name__}")
    if not name:
        raise fail("empty", "it is empty; names need 1 to 64 characters")
    if len(name) > max_length:
        raise fail("too_long", f"it has {len(name)} characters, the limit is {max_length}")
    if any(ch.isspace() for ch in name):
        raise fail("whitespace", "it contains whitespace; use underscores")
    if not name.isascii():
        raise fail("ascii", "it contains non-ASCII characters")
    if style == "snake_case" and not SNAKE_CASE_PATTERN.match(name):
        raise fail(
            "pattern",
            "it is not snake_case: use lowercase ASCII letters, digits and underscores, "
            f"starting with a letter (pattern {SNAKE_CASE_PATTERN.pattern})",
        )
    if not PROVIDER_NAME_PATTERN.match(name):
        raise fail(
            "pattern",
            "providers accept only letters, digits, '_' and '-' "
            f"(pattern {PROVIDER_NAME_PATTERN.pattern})",
        )


def alias_provider(model: str) -> str:
    """The key of `ToolSpec.aliases` that applies to a run of the model spec `model`.

    The spec's prefix (`anthropic:claude-sonnet-4-5` -> `anthropic`); `openai-responses`
    shares `openai`'s aliases; a `pydantic-ai:PROVIDER:MODEL` spec uses PROVIDER's
    (`google-gla` and `google-vertex` both `google`).
    """
    prefix, _, rest = model.partition(":")
    if prefix == "pydantic-ai":
        prefix = rest.partition(":")[0]
    return _SAME_PROVIDER.get(prefix, prefix)
