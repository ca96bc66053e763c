"""Hostile project files (`durable-tools.toml`): what `load_project` (and so `worker
--project`, `run --project`, `tools --project` and the plugin) does with forged, huge,
nested, case-trick and path-escaping input. Attacks that hold are plain tests; each one
that breaks the file's promises (docs/project.md, "Strict by design") is a strict xfail
whose reason starts with BREAK."""

from __future__ import annotations

import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus, ToolRegistry
from durable_tools.cli import build_parser, main
from durable_tools.cli._commands import agent_config
from durable_tools.cli._project import project_defaults
from durable_tools.sources import (
    McpConnectionError,
    McpHttp,
    OpenAPIError,
    attach_mcp,
    attach_openapi,
    http_tool,
)
from durable_tools.worker import Project, ProjectError, load_project
from durable_tools.worker._build import secrets_from_env
from support import answer, calls, running_worker, write_script

MCP_TEST_SERVER = Path(__file__).parent.parent / "sources" / "mcp_test_server.py"
SECRET = "hunter2-SECRET-41"


def write(root: Path, text: str, name: str = "durable-tools.toml") -> Path:
    path = root / name
    path.write_text(text)
    return path


def refused(root: Path, text: str) -> str:
    """The message of the ProjectError the file gets (it must get one)."""
    with pytest.raises(ProjectError) as caught:
        load_project(write(root, text))
    return str(caught.value)


# ----------------------------------------------------------------- what the TOML can hold


@pytest.mark.parametrize(
    "text",
    [
        'task_queue = "a"\n"task_queue" = "b"\n',  # a quoted key is the same key
        'task_queue = "a"\ntask_queue = "a"\n',
        "[worker]\nrequire_identity = true\n[worker]\nrequire_identity = false\n",
    ],
)
def test_a_duplicate_or_aliased_key_is_refused(tmp_path: Path, text: str) -> None:
    assert "not valid TOML" in refused(tmp_path, text)


@pytest.mark.parametrize(
    "key",
    ["Task_Queue", "TASK_QUEUE", "task-queue", "task_queue\u200b", "t\u0430sk_queue"],
)
def test_a_case_trick_or_look_alike_key_is_refused(tmp_path: Path, key: str) -> None:
    refused(tmp_path, f'"{key}" = "agents"\n')


@pytest.mark.parametrize("key", ["a\\u0000b", "a\\u001b[2Jb", "a\\u202eb"])
def test_a_key_with_control_characters_is_refused_and_shown_escaped(
    tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, f'"{key}" = 1\n')
    with pytest.raises(ProjectError):
        load_project(path)
    code = main(["tools", "--project", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "invalid project file" in err
    assert "\x00" not in err and "\x1b" not in err  # the terminal is not driven by the file


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 5000 + "]" * 5000 + "\n",
        "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
        '[[http]]\nname = "a"\nmethod = "GET"\nurl = "https://h.example/x"\n'
        "input_schema = " + "{a = " * 900 + "1" + "}" * 900 + "\n",
    ],
    ids=["arrays", "inline-tables", "input-schema"],
)
def test_deep_nesting_is_a_project_error(tmp_path: Path, text: str) -> None:
    refused(tmp_path, text)


def test_a_huge_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    text = 'task_queue = "a"\n' + "# padding\n" * 30_000
    assert "larger than" in refused(tmp_path, text)


@pytest.mark.parametrize(
    "text",
    [
        "[worker]\nmax_concurrent_activities = 99999999999999999999\n",  # past int64
        "[worker]\nmax_concurrent_activities = -1\n",
        "[worker]\nmax_concurrent_activities = true\n",
        "[worker]\ngraceful_shutdown_seconds = inf\n",
        "[worker]\ngraceful_shutdown_seconds = nan\n",
        "[limits]\nmax_cost = -inf\n",
        '[[mcp]]\nname = "a"\ncommand = "x"\n[mcp.options]\nmax_concurrent = true\n',
        '[[mcp]]\nname = "a"\ncommand = "x"\ntimeout_seconds = 1e300\n',
        "[limits]\nmax_turns = -5\n",
    ],
)
def test_numbers_out_of_range_non_finite_or_bool_are_refused(tmp_path: Path, text: str) -> None:
    refused(tmp_path, text)


@pytest.mark.parametrize(
    "text",
    [
        '[limits]\nmax_turns = "5"\n',
        "[limits]\nmax_turns = true\n",
        "[limits]\nmax_turns = 5.0\n",
        '[policy]\ntimeout_seconds = "100"\n',
        "[policy]\ntimeout_seconds = true\n",
        "[worker.model_limits.x]\nrequests_per_minute = true\n",
        '[worker.model_limits.x]\nrequests_per_minute = "500"\n',
    ],
)
def test_a_string_or_bool_for_a_number_in_a_nested_table_is_refused(
    tmp_path: Path, text: str
) -> None:
    refused(tmp_path, text)


# ------------------------------------------------------------------- files that are not files


def test_a_directory_dev_zero_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    for path, says in (
        (tmp_path, "cannot read project file"),
        (Path("/dev/zero"), "larger than"),
        (tmp_path / "nope.toml", "No such file"),
    ):
        with pytest.raises(ProjectError, match=says):
            load_project(path)


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "durable-tools.toml"
    os.mkfifo(fifo)
    outcome: list[Any] = []

    def load() -> None:
        try:
            outcome.append(load_project(fifo))
        except ProjectError as error:
            outcome.append(error)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout=20)  # bounds the hang only: the assertion is about the outcome
    if reader.is_alive():  # blocked in open(): give it a writer that writes nothing
        with open(fifo, "wb"):
            pass
        reader.join()
    assert isinstance(outcome[0], ProjectError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, 'task_queue = "a"\n')
    path.chmod(0)
    with pytest.raises(ProjectError, match="Permission denied"):
        load_project(path)


# ------------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    "document",
    ["/etc/passwd", "../outside.yaml", "specs/../../outside.yaml", "C:/x.yaml", "..\\\\x.yaml"],
)
def test_a_path_out_of_the_folder_is_refused(tmp_path: Path, document: str) -> None:
    assert "inside the project's folder" in refused(
        tmp_path, f'[[openapi]]\ndocument = "{document}"\n'
    )
    text = f'[[mcp]]\nname = "a"\ncommand = "x"\ncwd = "{document}"\n'
    assert "inside the project's folder" in refused(tmp_path, text)


@pytest.mark.parametrize("document", ["~/specs.yaml", "file:///etc/passwd"])
def test_a_home_or_file_url_document_stays_a_path_inside_the_folder(
    tmp_path: Path, document: str
) -> None:
    project = load_project(write(tmp_path, f'[[openapi]]\ndocument = "{document}"\n'))
    resolved = (project.root / project.openapi[0].document).resolve()
    assert resolved.is_relative_to(tmp_path.resolve())  # never the home folder or /etc


def test_a_path_through_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text('openapi: "3.0.0"\n')
    root = tmp_path / "project"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    refused(root, '[[openapi]]\ndocument = "link/secret.yaml"\n')


# ----------------------------------------------------------------------- URLs and headers


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "javascript:alert(1)", "ftp://h.example/x", "https://h.example/ x"],
)
def test_a_url_of_another_scheme_is_refused(tmp_path: Path, url: str) -> None:
    refused(tmp_path, f'[[mcp]]\nname = "a"\nurl = "{url}"\n')
    refused(tmp_path, f'[[http]]\nname = "a"\nmethod = "GET"\nurl = "{url}"\n')
    refused(tmp_path, f'[[openapi]]\ndocument = "specs.yaml"\nbase_url = "{url}"\n')


@pytest.mark.parametrize(
    "text",
    [
        f'[[mcp]]\nname = "a"\nurl = "https://user:{SECRET}@h.example/mcp"\n',
        f'[[http]]\nname = "a"\nmethod = "GET"\nurl = "https://u:{SECRET}@h.example/x"\n',
        f'[[http]]\nname = "a"\nmethod = "GET"\nurl = "https://h.example/x?api_key={SECRET}"\n',
        f'[[openapi]]\ndocument = "https://u:{SECRET}@h.example/openapi.json"\n',
    ],
    ids=["mcp-userinfo", "http-userinfo", "http-query-key", "openapi-userinfo"],
)
def test_a_credential_written_into_a_url_is_refused(tmp_path: Path, text: str) -> None:
    assert SECRET not in refused(tmp_path, text)


async def test_a_credential_in_a_url_is_not_repeated_when_the_source_is_down() -> None:
    # A project file refuses such a URL (above); one given in Python is never shown back.
    server = McpHttp(url=f"http://u:{SECRET}@127.0.0.1:9/mcp", timeout=5)
    with pytest.raises(McpConnectionError) as caught:
        await attach_mcp(ToolRegistry(), server)
    assert "127.0.0.1:9" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_credential_in_a_document_url_is_not_repeated_when_it_cannot_be_fetched() -> None:
    # As above: the file refuses it; a URL given in Python is never shown back.
    with pytest.raises(OpenAPIError) as caught:
        attach_openapi(ToolRegistry(), f"https://u:{SECRET}@127.0.0.1:9/openapi.json")
    assert "https://127.0.0.1:9/openapi.json" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_an_inline_argument_is_not_repeated_when_the_server_cannot_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f'[[mcp]]\nname = "a"\ncommand = "/nonexistent/srv"\nargs = ["--key", "{SECRET}"]\n'
    code = main(["tools", "--project", str(write(tmp_path, text))])
    captured = capsys.readouterr()
    assert code == 2 and "McpConnectionError" in captured.err
    assert SECRET not in captured.err + captured.out


@pytest.mark.parametrize(
    "name", ["AUTHORIZATION", "authorization", "X-Api-Key", "Proxy-Authorization", "Cookie"]
)
def test_a_credential_header_in_any_case_is_refused_inline(tmp_path: Path, name: str) -> None:
    text = (
        f'[[mcp]]\nname = "a"\nurl = "https://h.example/m"\nheaders = {{ "{name}" = "{SECRET}" }}\n'
    )
    assert SECRET not in refused(tmp_path, text)


@pytest.mark.parametrize("name", ["Authorizati\u043en", "Auth orization", "X-A:b", "X-A\\nB"])
def test_a_header_name_that_is_no_http_token_is_refused(tmp_path: Path, name: str) -> None:
    refused(
        tmp_path,
        f'[[http]]\nname = "a"\nmethod = "GET"\nurl = "https://h.example/x"\n'
        f'headers = {{ "{name}" = "v" }}\n',
    )


@pytest.mark.parametrize(
    "text",
    [
        '[[mcp]]\nname = "a"\nurl = "https://h.example/m"\nheaders = { X-Access-Key = "v" }\n',
        '[[mcp]]\nname = "a"\ncommand = "x"\nenv = { AWS_ACCESS_KEY_ID = "v" }\n',
        '[[http]]\nname = "a"\nmethod = "GET"\nurl = "https://h.example/x"\n'
        'headers = { X-Key = "v" }\n',
    ],
)
def test_every_name_the_docs_call_a_credential_is_refused_inline(tmp_path: Path, text: str) -> None:
    refused(tmp_path, text)


@pytest.mark.parametrize("value", ["v\\r\\nX-Evil: 1", "v\\nX-Evil: 1", "v\\u0000"])
def test_a_header_value_with_a_line_break_is_refused(tmp_path: Path, value: str) -> None:
    refused(
        tmp_path,
        f'[[mcp]]\nname = "a"\nurl = "https://h.example/m"\nheaders = {{ X-A = "{value}" }}\n',
    )


@pytest.mark.parametrize("secret", ["../etc/passwd", "a/b", "$HOME", "a b", "", "x" * 65])
def test_a_secret_name_that_looks_like_a_path_or_has_odd_characters_is_refused(
    tmp_path: Path, secret: str
) -> None:
    refused(
        tmp_path,
        f'[[mcp]]\nname = "a"\nurl = "https://h.example/m"\n'
        f'headers = {{ Authorization = {{ secret = "{secret}" }} }}\n',
    )


async def test_a_secret_named_in_upper_case_is_the_variable_of_that_name(tmp_path: Path) -> None:
    text = (
        f'[[mcp]]\nname = "calc"\ncommand = "{sys.executable}"\n'
        f'args = ["{MCP_TEST_SERVER}", "stdio"]\n'
        'env = { CALC_TOKEN = { secret = "FILES_TOKEN" } }\n'
    )
    project = load_project(write(tmp_path, text))
    secrets = secrets_from_env({"DURABLE_TOOLS_SECRET_FILES_TOKEN": SECRET})
    registry = await project.registry(secrets=secrets)
    assert any(spec.name.startswith("calc__") for spec in registry.specs())


# ---------------------------------------------------------------------------- flags win


def run_args(tmp_path: Path, text: str, *flags: str) -> Any:
    path = write(tmp_path, text)
    args = build_parser().parse_args(["run", "hello", "--project", str(path), *flags])
    project_defaults(args)
    return args


POLICY = """
[run]
model = "openai:gpt-4.1"
name = "support"
[policy]
require = "none"
on_deny = "tell_model"
[limits]
max_turns = 50
"""


def test_the_flags_win_over_the_files_policy_and_limits(tmp_path: Path) -> None:
    strict = tmp_path / "strict.json"
    strict.write_text('{"require": "all"}')
    args = run_args(
        tmp_path,
        POLICY,
        "--max-turns",
        "3",
        "--approval-policy",
        str(strict),
        "--on-deny",
        "end_run",
    )
    config = agent_config(args)
    assert config.limits.max_turns == 3
    assert config.approval.require == "all" and config.approval.on_deny == "end_run"
    assert isinstance(args.project_file, Project)


def test_a_name_flag_equal_to_its_default_still_wins(tmp_path: Path) -> None:
    args = run_args(tmp_path, POLICY, "--name", "agent")
    assert args.name == "agent"


def test_the_environment_variable_names_the_file_and_the_flag_wins_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo_like = tmp_path / "elsewhere"
    fifo_like.mkdir()
    monkeypatch.setenv("DURABLE_TOOLS_PROJECT", str(fifo_like))  # a directory
    code = main(["tools"])
    assert code == 2 and "cannot read project file" in capsys.readouterr().err
    good = write(tmp_path, '[[http]]\nname = "w"\nmethod = "GET"\nurl = "https://h.example/w"\n')
    code = main(["tools", "--project", str(good)])
    captured = capsys.readouterr()
    assert code == 0 and "w" in captured.out
    monkeypatch.setenv("DURABLE_TOOLS_PROJECT", "")  # empty: no project, not the cwd
    code = main(["tools"])
    assert code == 2 and "no tools" in capsys.readouterr().err


class FailingService(BaseHTTPRequestHandler):
    """Answers every request 500, naming nothing of it."""

    def do_GET(self) -> None:
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_a_credential_in_an_http_url_stays_out_of_the_runs_history(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # A project file refuses such a URL (above); a registry built in Python may still hold
    # one, and the run must never record it.
    server = ThreadingHTTPServer(("127.0.0.1", 0), FailingService)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://u:{SECRET}@127.0.0.1:{server.server_address[1]}/w?api_key={SECRET}"
    registry = ToolRegistry()
    http_tool(registry, name="w", method="GET", url_template=url, max_calls_per_run=1)
    model = write_script(tmp_path, [calls(("h1", "w", {})), answer("done")])
    try:
        async with running_worker(client, registry, task_queue):
            run = await DurableTools(client, task_queue).start("weather", model=model)
            result = await run.result()
            history = await run.handle.fetch_history()
            events = await run.events()
    finally:
        server.shutdown()
    assert result.status == RunStatus.COMPLETED
    assert SECRET not in history.to_json()
    assert all(SECRET not in (e.detail or "") for e in events)
