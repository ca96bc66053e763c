"""The "CLI reference" page, generated from the real argument parser when the site is built.

An MkDocs hook (mkdocs.yml, `hooks:`): `on_files` adds `cli-reference.md`, written from
`durable_tools.cli.build_parser()`, so every command, sub-command and flag a change adds
shows up on the site without anyone editing a page. `tests/test_docs_site.py` checks that
the page names every one of them.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["PAGE", "Command", "cli_reference", "commands", "on_files"]

PAGE = "cli-reference.md"
"""The generated page's path in the site (a file that exists only in the build)."""

_DEFAULT_GROUPS = {"positional arguments", "options", "optional arguments"}
"""argparse's own groups: their flags belong to the one command."""


@dataclass(frozen=True)
class Command:
    """One command of the parser: `durable-tools inbox token add`."""

    words: tuple[str, ...]
    """Its words after `durable-tools`; empty for the program itself."""
    help: str | None
    """The one line its parent's listing shows."""
    parser: argparse.ArgumentParser

    @property
    def name(self) -> str:
        return " ".join(("durable-tools", *self.words))


def commands(parser: argparse.ArgumentParser) -> Iterator[Command]:
    """Every command of `parser`, depth first in the parser's order, the program first."""

    def walk(
        node: argparse.ArgumentParser, words: tuple[str, ...], help: str | None
    ) -> Iterator[Command]:
        yield Command(words, help, node)
        for action in node._actions:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            seen: set[int] = set()
            for word, child in action.choices.items():
                if id(child) not in seen:  # an alias names a parser already listed
                    seen.add(id(child))
                    yield from walk(child, (*words, word), helps.get(word))

    yield from walk(parser, (), parser.description)


def _flags(action: argparse.Action) -> str:
    """How a reader types the argument: `-n, --namespace NAMESPACE`, `RUN_ID`."""
    if not action.option_strings:
        return str(action.metavar or action.dest).upper()
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.choices is not None and action.metavar is None:
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    return ", ".join(action.option_strings) + f" {metavar}"


USAGE_WIDTH = 88
"""Columns of the usage lines: fixed, so the page does not depend on the terminal."""


def _text(text: str) -> str:
    """Help text on one line, shown by Markdown as it is (`<NAME>`, `TLS_*`, `a|b`);
    backquotes stay code, as in the help texts that quote a command."""
    text = " ".join(text.split())
    for char in "\\*|[]":
        text = text.replace(char, "\\" + char)
    return text.replace("<", "&lt;")


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help as `--help` prints it (`%(default)s` expanded)."""
    if not action.help:
        return ""
    try:
        return parser._get_formatter()._expand_help(action)
    except (KeyError, TypeError, ValueError):  # a stray % in a help text
        return action.help


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(prog=parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _arguments(group: argparse._ArgumentGroup) -> list[argparse.Action]:
    """The group's arguments a reader types (not `-h`, not the sub-command's slot)."""
    return [
        action
        for action in group._group_actions
        if action.help != argparse.SUPPRESS
        and not isinstance(action, argparse._SubParsersAction | argparse._HelpAction)
    ]


def _group_key(group: argparse._ArgumentGroup) -> tuple[Any, ...]:
    return (group.title, tuple(_flags(action) for action in _arguments(group)))


def _table(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> list[str]:
    rows = ["| argument | what it does |", "| --- | --- |"]
    rows += [f"| `{_flags(a)}` | {_text(_help(parser, a))} |" for a in actions]
    return [*rows, ""]


def _anchor(title: str) -> str:
    """The id MkDocs' toc extension gives a heading of that title."""
    return "-".join("".join(c if c.isalnum() or c == "-" else " " for c in title.lower()).split())


def _sentence(text: str) -> str:
    text = _text(text)
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _command_section(command: Command, shared: set[tuple[Any, ...]]) -> list[str]:
    lines = [f"## `{command.name}`", ""]
    if command.help:
        lines += [_sentence(command.help), ""]
    if command.parser.description and command.parser.description != command.help:
        lines += [_text(command.parser.description), ""]
    lines += ["```text", _usage(command.parser), "```", ""]
    children = [c for c in commands(command.parser) if len(c.words) == 1]
    if children:
        links = ", ".join(
            f"[`{child.words[0]}`](#{_anchor(' '.join((command.name, *child.words)))})"
            for child in children
        )
        lines += [f"Sub-commands: {links}.", ""]
    groups = command.parser._action_groups
    own = [a for g in groups if g.title in _DEFAULT_GROUPS for a in _arguments(g)]
    if own:  # positional arguments and options: one table, in the usage's order
        lines += _table(command.parser, own)
    for group in groups:
        actions = _arguments(group)
        if group.title in _DEFAULT_GROUPS or not actions:
            continue
        if _group_key(group) in shared:
            lines += [f"And the [{group.title}](#{_anchor(str(group.title))}) flags.", ""]
            continue
        about = f": {_text(group.description)}" if group.description else ""
        lines += [f"**{_text(str(group.title))}**{about}", ""]
        lines += _table(command.parser, actions)
    return lines


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """The Markdown page: every command with its usage, and every argument with its help.

    A named group of flags that several commands share (the Temporal connection flags)
    is listed once, under "Shared flags", and each command links to it.
    """
    every = list(commands(parser))
    named_groups = [
        group
        for command in every
        for group in command.parser._action_groups
        if group.title not in _DEFAULT_GROUPS and _arguments(group)
    ]
    counts = Counter(_group_key(group) for group in named_groups)
    shared = {key for key, count in counts.items() if count > 1}

    lines = [
        "# CLI reference",
        "",
        "Generated from the command's own parser (`durable_tools.cli.build_parser()`) each",
        "time the site is built: it lists every command and flag of this version, as `--help`",
        "prints them. The [command line](cli.md) page shows how they fit together.",
        "",
    ]
    if parser.epilog:
        lines += [_text(parser.epilog), ""]
    for command in every[1:]:
        lines += _command_section(command, shared)
    if shared:
        lines += ["## Shared flags", ""]
    done: set[tuple[Any, ...]] = set()
    for group in named_groups:
        key = _group_key(group)
        if key in shared and key not in done:
            done.add(key)
            lines += [f"### {_text(str(group.title))}", ""]
            if group.description:
                lines += [_text(group.description), ""]
            lines += _table(parser, _arguments(group))
    return "\n".join(lines).rstrip() + "\n"


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated page to the site's files."""
    from mkdocs.structure.files import File

    from durable_tools.cli import build_parser

    files.append(File.generated(config, PAGE, content=cli_reference(build_parser())))
    return files
