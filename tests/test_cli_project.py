"""The command line as a newcomer meets it: from their own project folder, with their module."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

CLI = [str(Path(sys.executable).parent / "durable-tools")]  # the installed command, as users run it


def run_cli(*args: str, cwd: Path, path: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the command in `cwd`; `path`: keep PYTHONPATH (else nothing but the folder)."""
    env = {k: v for k, v in os.environ.items() if path or k != "PYTHONPATH"}
    return subprocess.run(
        [*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def write_project(root: Path) -> None:
    package = root / "myapp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(
        "from durable_tools.tools import ToolRegistry\n"
        "registry = ToolRegistry()\n\n\n"
        "@registry.tool(read_only=True)\n"
        "def greet(name: str) -> str:\n"
        '    """Greet someone."""\n'
        '    return f"hello {name}"\n'
    )
    (package / "broken.py").write_text(
        "x = 1\n\n\nraise RuntimeError('the database URL is not set')\n"
    )


def test_tools_are_found_from_the_project_folder_without_pythonpath(tmp_path: Path) -> None:
    write_project(tmp_path)
    listed = run_cli("tools", "--tools", "myapp.tools", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert '"greet"' in listed.stdout


def test_an_error_inside_the_users_module_shows_its_file_and_line(tmp_path: Path) -> None:
    write_project(tmp_path)
    failed = run_cli("tools", "--tools", "myapp.broken", cwd=tmp_path)
    assert failed.returncode != 0
    assert "RuntimeError: the database URL is not set" in failed.stderr
    assert f'{tmp_path / "myapp" / "broken.py"}", line 4' in failed.stderr


def test_a_module_that_is_not_there_says_where_it_looked(tmp_path: Path) -> None:
    failed = run_cli("tools", "--tools", "nowhere.tools", cwd=tmp_path)
    assert failed.returncode != 0
    assert "no module 'nowhere'" in failed.stderr and str(tmp_path) in failed.stderr
    assert "Traceback" not in failed.stderr


def test_version(tmp_path: Path) -> None:
    shown = run_cli("--version", cwd=tmp_path)
    assert shown.returncode == 0
    assert shown.stdout.strip() == f"durable-tools {version('durable-tools')}"


def test_a_project_file_that_breaks_the_schema_stops_the_worker_naming_the_key(
    tmp_path: Path,
) -> None:
    (tmp_path / "durable-tools.toml").write_text("[worker]\nrequire_identiy = true\n")
    failed = run_cli("worker", "--project", "durable-tools.toml", cwd=tmp_path, path=True)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert "durable-tools.toml: worker.require_identiy: Extra inputs are not permitted" in (
        failed.stderr
    )


def test_a_worker_needs_tools_or_a_project(tmp_path: Path) -> None:
    failed = run_cli("worker", cwd=tmp_path, path=True)
    assert failed.returncode == 2
    assert "give --tools MODULE[:ATTR] or --project FILE" in failed.stderr


def test_run_takes_its_model_from_the_flag_or_the_project(tmp_path: Path) -> None:
    (tmp_path / "durable-tools.toml").write_text("[limits]\nmax_turns = 3\n")
    failed = run_cli("run", "hello", "--project", "durable-tools.toml", cwd=tmp_path, path=True)
    assert failed.returncode != 0 and "no model: give --model SPEC" in failed.stderr
