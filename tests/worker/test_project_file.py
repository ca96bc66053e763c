"""The project file's parsing: strict, every refusal naming the file and the key, and no
credential ever written into it (or repeated in an error)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from durable_tools.worker import MAX_PROJECT_BYTES, ProjectError, load_project

FULL = """
task_queue = "agents"
tools = "myapp.tools:registry"

[worker]
max_concurrent_activities = 50
graceful_shutdown_seconds = 12.5
require_identity = true
[worker.model_limits."openai:gpt-4.1"]
requests_per_minute = 500
tokens_per_minute = 30000

[run]
model = "openai:gpt-4.1"
name = "support"

[policy]
require = "mutating"
on_deny = "end_run"
deny_tools = ["files__delete"]

[limits]
max_turns = 30
max_cost = 2.5

[[mcp]]
name = "files"
url = "https://mcp.example.com/mcp"
exclude = ["delete*"]
[mcp.headers]
Authorization = { secret = "files_token", template = "Bearer {}" }
"User-Agent" = "me"
[mcp.options]
approval = true
tags = ["files"]
max_concurrent = 4

[[mcp]]
name = "sqlite"
command = "uvx"
args = ["mcp-server-sqlite", "--db-path", "data/app.db"]
cwd = "servers"
env = { SQLITE_TOKEN = { secret = "sqlite" }, LOG_LEVEL = "warning" }

[[openapi]]
document = "specs/pets.yaml"
prefix = "pets"
auth = { kind = "header", name = "X-Api-Key", secret = "pets_key" }
[openapi.options]
start_to_close_timeout = 20

[[http]]
name = "weather"
method = "GET"
url = "https://api.example.com/weather/{city}"
auth = { kind = "query", name = "key", secret = "weather_key" }
"""


MCP_URL = "[[mcp]]\nname='a'\nurl='http://x'\n"
"""The start of a project file's MCP server reached by URL."""
MCP_COMMAND = "[[mcp]]\nname='a'\ncommand='x'\n"
"""The start of a project file's MCP server run as a command."""
HTTP_GET = "[[http]]\nname='a'\nmethod='GET'\nurl='http://x'\n"
"""The start of a project file's HTTP tool."""


def project_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "durable-tools.toml"
    path.write_text(text)
    return path


def test_a_full_project_file_reads_as_written(tmp_path: Path) -> None:
    project = load_project(project_file(tmp_path, FULL))
    assert project.root == tmp_path.resolve()
    assert (project.task_queue, project.tools) == ("agents", "myapp.tools:registry")
    assert project.worker.require_identity and project.worker.max_concurrent_activities == 50
    assert project.worker.model_limits["openai:gpt-4.1"].requests_per_minute == 500
    assert project.policy is not None and project.policy.on_deny == "end_run"
    assert project.limits is not None and project.limits.max_turns == 30
    files, sqlite = project.mcp
    assert files.options.options() == {"approval": True, "tags": ["files"], "max_concurrent": 4}
    assert sqlite.args[-1] == "data/app.db" and sqlite.cwd == "servers"
    assert project.openapi[0].options.options() == {"start_to_close_timeout": 20.0}
    assert project.http[0].auth is not None and project.http[0].auth.kind == "query"


def test_an_empty_file_is_a_project_with_nothing_in_it(tmp_path: Path) -> None:
    project = load_project(project_file(tmp_path, ""))
    assert (project.mcp, project.openapi, project.http, project.policy) == ([], [], [], None)


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("tasks_queue = 'x'", "tasks_queue", "Extra inputs"),  # a typo is not ignored
        ("[worker]\nrequire_identiy = true", "worker.require_identiy", "Extra inputs"),
        ("[policy]\ndeny = ['x']", "policy.deny", "Extra inputs"),
        ("[limits]\nmax_turn = 3", "limits.max_turn", "Extra inputs"),
        (HTTP_GET + "urll='y'", "http.0.urll", "Extra"),
        (
            "[worker]\nmax_concurrent_activities = '5'",
            "worker.max_concurrent_activities",
            "integer",
        ),
        ("[worker]\nrequire_identity = 'yes'", "worker.require_identity", "boolean"),
        (
            "[worker]\nmax_concurrent_activities = 9223372036854775807",
            "worker.max_concurrent",
            "less",
        ),
        ("[limits]\nmax_turns = 0", "limits.max_turns", "greater"),
        ("[limits]\nmax_cost = inf", "limits.max_cost", "finite"),
        (
            "[worker.model_limits.m]\nrequests_per_minute = nan",
            "worker.model_limits.m.requests",
            "finite",
        ),
        (MCP_URL + "timeout_seconds=-inf", "mcp.0.timeout_seconds", "finite"),
        (MCP_URL + "timeout_seconds=1e12", "mcp.0.timeout_seconds", "less"),
        ("[[openapi]]\ndocument='../../etc/passwd'", "openapi.0", "inside the project"),
        ("[[openapi]]\ndocument='/etc/passwd'", "openapi.0", "inside the project"),
        ("[[openapi]]\ndocument='specs/..\\\\..\\\\x.json'", "openapi.0", "inside the project"),
        ("[[openapi]]\ndocument='C:/x.json'", "openapi.0", "inside the project"),
        (MCP_COMMAND + "cwd='../up'", "mcp.0", "inside the project"),
        ("[[mcp]]\nname='a'", "mcp.0", "give `url`"),
        (MCP_URL + "command='y'", "mcp.0", "give `url`"),
        ("[[mcp]]\nname='a b'\nurl='http://x'", "mcp.0.name", "pattern"),
        ("[[mcp]]\nname='a'\nurl='file:///etc/passwd'", "mcp.0.url", "pattern"),
        ("[[http]]\nname='a'\nmethod='TRACE'\nurl='http://x'", "http.0.method", "GET"),
        (HTTP_GET + "auth={kind='header',secret='s'}", "http.0.auth", "needs `name`"),
        (HTTP_GET + "[http.options]\nshell=true", "http.0.options.shell", "Extra"),
        (HTTP_GET + "[http.options]\nrate_limit=1e300", "http.0.options.rate_limit", "less"),
        (MCP_URL + "headers={'X-A\\r\\nHost: evil'='1'}", "mcp.0.headers", "pattern"),
        (MCP_COMMAND + "env={'LD PRELOAD'='1'}", "mcp.0.env", "pattern"),
        ("tools = 'os; import x'", "tools", "pattern"),
        ("task_queue = 'a b'", "task_queue", "pattern"),
        ("[policy]\nrequire = 'sometimes'", "policy.require", "tool"),
        ("not toml at all [", "not valid TOML", ""),
    ],
)
def test_a_file_that_breaks_the_schema_is_refused_naming_the_key(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    path = project_file(tmp_path, text)
    with pytest.raises(ProjectError) as refused:
        load_project(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and key in message and problem in message


@pytest.mark.parametrize(
    "text",
    [
        MCP_URL + "headers={Authorization='Bearer sk-live-SENTINEL'}",
        MCP_URL + "headers={'X-API-Key'='sk-live-SENTINEL'}",
        MCP_COMMAND + "env={GITHUB_TOKEN='sk-live-SENTINEL'}",
        MCP_COMMAND + "env={DB_PASSWORD='sk-live-SENTINEL'}",
        "[[openapi]]\ndocument='a.json'\nheaders={Cookie='session=sk-live-SENTINEL'}",
        HTTP_GET + "headers={authorization='sk-live-SENTINEL'}",
    ],
)
def test_a_credential_written_inline_is_refused_and_never_repeated(
    tmp_path: Path, text: str
) -> None:
    with pytest.raises(ProjectError, match="looks like a credential") as refused:
        load_project(project_file(tmp_path, text))
    assert "sk-live-SENTINEL" not in str(refused.value)
    assert "secret = " in str(refused.value)  # it says how to write it instead


def test_an_error_never_repeats_a_value_given(tmp_path: Path) -> None:
    text = "[[mcp]]\nname='a'\nurl='http://x'\nheaders={Accept={secret='x', value='sk-SENTINEL'}}"
    with pytest.raises(ProjectError) as refused:
        load_project(project_file(tmp_path, text))
    assert "sk-SENTINEL" not in str(refused.value) and "mcp.0.headers.Accept" in str(refused.value)


def test_huge_and_unreadable_files_are_refused(tmp_path: Path) -> None:
    huge = project_file(tmp_path, "# " + "x" * MAX_PROJECT_BYTES)
    with pytest.raises(ProjectError, match="larger than"):
        load_project(huge)
    with pytest.raises(ProjectError, match="cannot read project file"):
        load_project(tmp_path / "missing.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"task_queue = '\xff\xfe'")
    with pytest.raises(ProjectError, match="not valid TOML"):
        load_project(binary)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "".join(f"[[http]]\nname='t{n}'\nmethod='GET'\nurl='http://x'\n" for n in range(65)),
            "http: List should have at most 64",  # too many sources
        ),
        (
            HTTP_GET + "input_schema={maximum=[1, nan]}",  # a non-finite number, however deep
            r"http\.0\.input_schema\.maximum\.1: a number",
        ),
    ],
    ids=["too-many-sources", "a-non-finite-number-deep-in-a-schema"],
)
def test_a_file_past_a_bound_is_refused_saying_where(
    tmp_path: Path, text: str, problem: str
) -> None:
    with pytest.raises(ProjectError, match=problem):
        load_project(project_file(tmp_path, text))


def test_the_documented_example_is_a_valid_project(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "project.md").read_text()
    (example,) = re.findall(r"```toml\n(.*?)```", page, re.S)
    project = load_project(project_file(tmp_path, example))
    assert [s.name for s in project.mcp] == ["files", "sqlite"]
    assert project.openapi[0].auth is not None and project.http[0].name == "weather"


async def test_the_plugin_takes_the_files_identity_rule_and_model_limits(tmp_path: Path) -> None:
    text = (
        "[worker]\nrequire_identity = true\n"
        '[worker.model_limits."openai:gpt-4.1"]\nrequests_per_minute = 60\n'
    )
    plugin = await load_project(project_file(tmp_path, text)).plugin(secrets={})
    assert plugin.runtime.required_identity == ("user", "tenant")
    assert plugin.model_limits["openai:gpt-4.1"].requests_per_minute == 60
    assert plugin.registry.specs() == []  # no module, no sources: no tools
    relaxed = await load_project(project_file(tmp_path, text)).plugin(require_identity=False)
    assert relaxed.runtime.required_identity == ()  # the caller's options win
