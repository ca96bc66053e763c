"""The command line's flags: every one explained, and the connection flags on every command
that talks to Temporal."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import DurableTools
from durable_tools.cli import build_parser
from durable_tools.demo.tools import registry as demo_registry
from support import answer, running_worker, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

# Commands that never reach a Temporal server (the rest must take the connection flags).
_OFFLINE = {
    "server",
    "codec-server",
    "inbox token add",
    "inbox token list",
    "inbox token rotate",
    "inbox token remove",
    "artifact get",
    "tools",
    "demo",
}


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the real command line, named by its command path."""
    yield " ".join(path) or "durable-tools", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, (*path, name))


def _leaf_commands() -> dict[str, argparse.ArgumentParser]:
    return {
        name: parser
        for name, parser in _commands(build_parser())
        if parser.get_default("handler") is not None
    }


def test_every_argument_of_every_command_has_help() -> None:
    missing = [
        f"{name}: {'/'.join(action.option_strings) or action.dest}"
        for name, parser in _commands(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and (not action.help or action.help == argparse.SUPPRESS)
    ]
    assert missing == []


def test_every_command_help_page_says_what_the_command_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    commands = list(_commands(build_parser()))
    assert len(commands) > 40  # the walk reaches sub-sub-commands (inbox token add, ...)
    missing = [name for name, parser in commands if not (parser.description or "").strip()]
    assert missing == []
    # And the page shows it: `durable-tools schedule pause --help` names what it does.
    with pytest.raises(SystemExit):
        build_parser().parse_args(["schedule", "pause", "--help"])
    page = capsys.readouterr().out
    assert "\n\nstop starting runs (runs already started go on)\n" in page, page


def test_every_command_that_reaches_temporal_takes_the_connection_flags() -> None:
    commands = _leaf_commands()
    assert set(commands) >= _OFFLINE  # a renamed command must not slip past this test
    without = [
        name
        for name, parser in commands.items()
        if name not in _OFFLINE
        and not {"--address", "--namespace", "--api-key", "--tls", "--profile"}
        <= {flag for action in parser._actions for flag in action.option_strings}
    ]
    assert without == []


async def test_events_connects_where_its_flags_say(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    model = write_script(tmp_path, [answer("done")])
    async with running_worker(client, demo_registry, task_queue):
        run = await DurableTools(client, task_queue).start("hello", model=model)
        await run.result()
        # The environment names no server; the flags name the real one.
        monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
        monkeypatch.setenv("TEMPORAL_NAMESPACE", "no-such-namespace")
        code, out, err = await cli(
            capsys, "events", run.run_id, "--address", cli_env, "-n", client.namespace
        )
    assert code == 0, err
    assert "run.completed" in out
