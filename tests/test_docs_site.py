"""The docs site says what the code is: every page reachable, the generated references
complete, the layout and the figures the pages quote taken from their one source.

tests/test_docs_code.py runs the pages' code blocks; this file checks the site around them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import griffe
import pytest
import yaml

from durable_tools.cli import build_parser
from test_public_api import PUBLIC_MODULES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SOURCE = ROOT / "src" / "durable_tools"


def _load_hook() -> ModuleType:
    """docs/hooks/cli_reference.py, the MkDocs hook that writes the CLI reference."""
    spec = importlib.util.spec_from_file_location(
        "cli_reference", DOCS / "hooks" / "cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


HOOK = _load_hook()


def _nav_pages(entries: Any) -> list[str]:
    """Every page the nav of mkdocs.yml names, in order."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in _nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in _nav_pages(value)]
    raise AssertionError(f"unexpected nav entry {entries!r}")


def _config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return config


# ------------------------------------------------------------------------- the nav


def test_every_page_is_in_the_nav_once_and_every_nav_entry_is_a_page() -> None:
    nav = _nav_pages(_config()["nav"])
    on_disk = {
        str(path.relative_to(DOCS))
        for path in DOCS.rglob("*.md")
        if not path.is_relative_to(DOCS / "hooks")
    }
    assert sorted(on_disk - set(nav)) == [], "pages built but not in mkdocs.yml's nav"
    assert sorted(set(nav) - on_disk - {HOOK.PAGE}) == [], "nav entries with no page"
    assert HOOK.PAGE in nav, "the generated CLI reference is not in the nav"
    assert len(nav) == len(set(nav)), "a page in the nav twice"


def test_the_strict_build_fails_on_a_page_left_out_of_the_nav() -> None:
    # The check above runs without MkDocs; the build makes the same rule with this setting.
    assert _config()["validation"]["nav"]["omitted_files"] == "warn"
    assert _config()["strict"] is True


@pytest.mark.timeout(600)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    # Without --quiet: with it MkDocs drops warnings before --strict counts them, so a
    # broken docstring or a page left out of the nav passed `make docs`.
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "WARNING" not in output, output[-6000:]
    page = (tmp_path / "site" / "cli-reference" / "index.html").read_text()
    assert "durable-tools inbox token add" in page and "--tls-server-name" in page


def test_make_docs_counts_warnings() -> None:
    makefile = (ROOT / "Makefile").read_text()
    command = next(line for line in makefile.splitlines() if "mkdocs build" in line)
    assert "--strict" in command and "--quiet" not in command and " -q" not in command


# ------------------------------------------------------------------------- the CLI reference


def _sections(page: str) -> dict[str, str]:
    """The page's `## ...` sections by heading."""
    parts = re.split(r"^## (.+)$", page, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        f"`{HOOK._flags(action)}`"
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        and not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    }


def test_the_cli_reference_lists_every_command_and_flag_with_its_help() -> None:
    parser = build_parser()
    page = HOOK.cli_reference(parser)
    sections = _sections(page)
    shared = sections.pop("Shared flags")
    commands = list(HOOK.commands(parser))[1:]
    assert len(commands) > 40  # `inbox token add` and its like included
    assert set(sections) == {f"`{command.name}`" for command in commands}
    for command in commands:
        text = sections[f"`{command.name}`"]
        for flag in _options(command.parser):
            assert flag in text or flag in shared, f"{command.name}: {flag} not listed"
        if command.help:
            assert HOOK._sentence(command.help) in text
    assert "`--tls-server-name NAME` | name on the server's certificate |" in shared
    assert "[Temporal connection](#temporal-connection)" in sections["`durable-tools run`"]


def test_a_command_or_flag_added_to_the_parser_is_on_the_page_at_once() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    added = sub.add_parser("frobnicate", help="do the new thing", aliases=["frob"])
    added.add_argument("RUN", help="the run <id> | its alias")
    added.add_argument("--level", type=int, default=3, help="how much (default %(default)s)")
    added.add_argument("--secret-thing", help=argparse.SUPPRESS)
    section = _sections(HOOK.cli_reference(parser))["`durable-tools frobnicate`"]
    assert "Do the new thing." in section
    assert "| `RUN` | the run &lt;id> \\| its alias |" in section  # Markdown shows it as is
    assert "| `--level LEVEL` | how much (default 3) |" in section
    assert "secret-thing" not in section
    assert "`durable-tools frob`" not in _sections(HOOK.cli_reference(parser))  # one section


def test_the_cli_reference_does_not_depend_on_the_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    wide = HOOK.cli_reference(build_parser())
    monkeypatch.setenv("COLUMNS", "40")
    assert HOOK.cli_reference(build_parser()) == wide


# ------------------------------------------------------------------------- the API reference


def test_the_api_reference_documents_every_public_module() -> None:
    documented = set(re.findall(r"^::: ([\w.]+)$", (DOCS / "api.md").read_text(), re.MULTILINE))
    assert sorted(set(PUBLIC_MODULES) - documented) == []
    assert sorted(documented - set(PUBLIC_MODULES)) == [], "api.md documents a private module"


def test_the_api_reference_documents_every_public_name() -> None:
    # mkdocstrings renders what griffe (its collector) sees as a module's exported members,
    # without importing the code: the top level's lazy exports must reach it through the
    # `TYPE_CHECKING` imports, and no `members:` option may narrow a section.
    assert "members:" not in (DOCS / "api.md").read_text()
    package = griffe.load("durable_tools", search_paths=[SOURCE.parent], resolve_aliases=True)
    undocumented = []
    for module_name in PUBLIC_MODULES:
        module = (
            package[module_name.removeprefix("durable_tools").lstrip(".")]
            if (module_name != "durable_tools")
            else package
        )
        exported = {name for name, member in module.members.items() if member.is_exported}
        for name in importlib.import_module(module_name).__all__:
            if name not in exported:
                undocumented.append(f"{module_name}.{name}")
        assert exported <= set(importlib.import_module(module_name).__all__) | {"__version__"}
    assert undocumented == []


# ------------------------------------------------------------------------- what pages claim


def _concepts_layout() -> str:
    text = (DOCS / "concepts.md").read_text()
    return text.split("## Where the code lives", 1)[1].split("```", 2)[1]


def test_the_concepts_layout_names_every_package_of_the_tree() -> None:
    layout = _concepts_layout()
    named = set(re.findall(r"^\s+([\w.]+/?) {2,}\S", layout, flags=re.MULTILINE))
    packages = {
        f"{path.parent.name}/" for path in SOURCE.rglob("__init__.py") if path.parent != SOURCE
    }
    public_modules = {
        path.name for path in SOURCE.glob("*.py") if not path.name.startswith("_")
    } - {"__init__.py"}
    assert sorted(packages - named) == [], "packages the layout in docs/concepts.md omits"
    assert sorted(public_modules - named) == [], "public modules it omits"
    assert sorted(named - packages - public_modules) == [], "names that are not in the tree"


def test_every_source_path_the_concepts_page_names_exists() -> None:
    text = (DOCS / "concepts.md").read_text()
    paths = set(re.findall(r"\b((?:[a-z_]+/)+_?[a-z_]+\.py)\b", text))
    assert paths, "the route of one call names its files"
    missing = sorted(
        path for path in paths if not (SOURCE / path).exists() and not (ROOT / path).exists()
    )
    assert missing == [], "docs/concepts.md names files that are not in the tree"


def test_every_test_a_page_cites_exists() -> None:
    pages = [ROOT / "README.md", *DOCS.rglob("*.md")]
    cited = {
        (match[1], match[2])
        for page in pages
        for match in re.finditer(r"(tests/[\w/]+\.py)::(\w+)", page.read_text())
    }
    assert len(cited) > 10
    missing = [
        f"{file}::{name}"
        for file, name in sorted(cited)
        if not (ROOT / file).exists()
        or not re.search(rf"^(async )?def {name}\(", (ROOT / file).read_text(), re.MULTILINE)
    ]
    assert missing == [], "tests cited by the docs that do not exist (moved or renamed?)"


def test_the_comparison_quotes_the_per_call_figure_of_the_benchmarks_page() -> None:
    benchmarks = (DOCS / "benchmarks.md").read_text()
    row = next(line for line in benchmarks.splitlines() if line.startswith("| per tool call,"))
    figure = re.search(r"\*\*(\d+\.\d+x)\*\*", row)
    assert figure is not None, row
    comparison = (DOCS / "comparison.md").read_text()
    ours = next(line for line in comparison.splitlines() if line.startswith("| time per tool"))
    assert ours.split("|")[2].strip().startswith(f"{figure[1]} ([benchmarks](benchmarks.md"), ours
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"\d\.\d+x", readme) is None, "the README quotes a figure: link instead"


# ------------------------------------------------------------------------- the README


def test_the_readme_keeps_what_a_newcomer_needs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo " in readme and "make test " in readme
    assert "Both work on a fresh machine with only `python3` (3.11+) and `make`" in readme
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra in set(extras["optional-dependencies"]) - {"dev"}:
        assert f"`{extra}`" in readme, f"the README's extras table lacks {extra}"
    lines = readme.count("\n")
    assert lines <= 160, f"README.md is {lines} lines: move the detail to a docs page"


def test_the_readme_links_to_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(links) > 20
    missing = sorted({link for link in links if not (ROOT / link).exists()})
    assert missing == [], "README links to files that do not exist"
