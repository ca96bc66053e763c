"""Every code block in README.md, examples/README.md and docs/**/*.md runs as written.

- ```python blocks run as programs (`__name__ == "__main__"`), all in one interpreter, each
  in fresh globals, from a folder that holds a copy of examples/myapp, against the session's
  dev server with `durable-tools worker --tools myapp.tools` running: the setting the quick
  start leaves a reader in. A block the docs include from a file (`--8<-- "FILE:SECTION"`,
  pymdownx.snippets) is checked to come from a file tests/test_examples.py runs; a README
  block that copies an example file is that example, run there.
- Shell blocks: every `durable-tools ...` command parses with the real parser, the cheap
  ones (`tools`, `--version`) run; `make TARGET` names a Makefile target; `pip install`
  names extras pyproject.toml declares. A block marked `<!-- runs-against-worker -->` runs
  for real, its commands in page order, from examples/ with `durable-tools worker --tools
  myapp.tools` running; the text block right after it is what they print (`...` stands
  for anything, such as an id or a link).
- json and toml blocks parse; text blocks are output or diagrams, shown as they are.

A block that cannot run says why in `<!-- not-run: REASON -->` right above it; those are
few, and counted.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_tools.cli import build_parser
from test_examples import EXAMPLES, PROGRAM, durable_tools, myapp_environment, myapp_worker

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "examples" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
]

PYTHON = {"python"}
SHELL = {"sh", "bash"}
DATA = {"json", "toml"}
TEXT = {"text"}

MAX_NOT_RUN = 8
"""Blocks that may say why they cannot run; raise it only with a reason per block."""

TESTED_FILES = {
    "examples/define_a_tool.py",
    "examples/durable_run.py",
    "examples/custom_model_adapter.py",
    "examples/embedding.py",
    "examples/frameworks.py",
    "examples/openai_agents.py",
    "examples/myapp/tools.py",
    "examples/myapp/mcp_server.py",
    "examples/myapp/providers.toml",
}
"""Files tests/test_examples.py runs (or imports, for myapp): what docs may include."""

BLOCK_TIMEOUT = 60
"""Seconds one Python block may take (it may run an agent with the scripted model)."""

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[^\s`]*)\s*$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
_AGAINST_WORKER = re.compile(r"^\s*<!--\s*runs-against-worker\s*-->\s*$")
_SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<file>[^":]+)(?::(?P<section>[\w-]+))?"\s*$')


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    """The page, relative to the repository root."""
    line: int
    """The line of the opening fence (1-based)."""
    lang: str
    code: str
    """The block's text, without the fence's indentation."""
    not_run: str | None
    """The reason given by `<!-- not-run: REASON -->` above the block, if any."""
    against_worker: bool = False
    """Marked `<!-- runs-against-worker -->`: a shell block that runs against a worker."""
    output: str | None = None
    """The text block right after it (only blank lines between), if any."""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def snippets(self) -> list[tuple[str, str | None]]:
        """The `--8<--` includes of the block: (file, section)."""
        found = [_SNIPPET.match(line) for line in self.code.splitlines()]
        return [(m["file"], m["section"]) for m in found if m]


def page_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order."""
    lines = page.read_text().splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
        reason = _NOT_RUN.match(previous)
        code = textwrap.dedent("\n".join(lines[index + 1 : end])) + "\n"
        blocks.append(
            Block(
                page=str(page.relative_to(ROOT)),
                line=index + 1,
                lang=opening["lang"],
                code=code,
                not_run=reason["reason"] if reason else None,
                against_worker=_AGAINST_WORKER.match(previous) is not None,
            )
        )
        index = end + 1
    return [
        dataclasses.replace(block, output=_output_after(lines, block, following))
        for block, following in zip(blocks, [*blocks[1:], None], strict=False)
    ]


def _output_after(lines: list[str], block: Block, following: Block | None) -> str | None:
    """The text of `following` when it is a text block right after `block`."""
    if following is None or following.lang not in TEXT:
        return None
    closing = block.line + block.code.count("\n")  # the closing fence's index (0-based)
    between = lines[closing + 1 : following.line - 1]
    return following.code if all(not line.strip() for line in between) else None


BLOCKS = [block for page in PAGES for block in page_blocks(page)]


def _example_bodies() -> dict[str, str]:
    """Each example file's code after its docstring, as the README shows it."""
    bodies = {}
    for path in sorted((ROOT / "examples").glob("*.py")):
        bodies[path.name] = path.read_text().split('"""', 2)[2].strip() + "\n"
    return bodies


def _copied_example(block: Block) -> str | None:
    """The example file the block copies whole (tests/test_examples.py runs it), if any."""
    return next((name for name, body in _example_bodies().items() if body == block.code), None)


def _of(languages: set[str]) -> list[Any]:
    return [pytest.param(b, id=b.where) for b in BLOCKS if b.lang in languages and not b.not_run]


# ------------------------------------------------------------------------- the page rules


def test_every_block_says_what_it_holds() -> None:
    unknown = [b.where for b in BLOCKS if b.lang not in PYTHON | SHELL | DATA | TEXT]
    assert not unknown, f"blocks without a known language (python, sh, json, toml, text): {unknown}"


def test_blocks_that_do_not_run_are_few_and_say_why() -> None:
    skipped = [b for b in BLOCKS if b.not_run is not None]
    assert all(len(b.not_run or "") >= 10 for b in skipped), [b.where for b in skipped]
    assert len(skipped) <= MAX_NOT_RUN, [f"{b.where}: {b.not_run}" for b in skipped]
    assert all(b.lang in PYTHON | SHELL for b in skipped), "only code needs a reason not to run"


@pytest.mark.parametrize("block", [pytest.param(b, id=b.where) for b in BLOCKS if b.snippets])
def test_included_code_comes_from_a_tested_file(block: Block) -> None:
    assert block.page.startswith("docs/"), "README.md is read on GitHub: snippets stay raw there"
    assert block.code.strip().count("\n") + 1 == len(block.snippets), "only includes in it"
    for file, section in block.snippets:
        assert file in TESTED_FILES, f"{block.where}: {file} is not run by a test"
        text = (ROOT / file).read_text()
        if section:
            assert f"--8<-- [start:{section}]" in text, f"{file} has no section {section}"
            assert f"--8<-- [end:{section}]" in text, f"{file} never ends section {section}"


@pytest.mark.parametrize("block", _of(DATA))
def test_data_blocks_parse(block: Block) -> None:
    if block.lang == "toml":
        tomllib.loads(block.code)
        return
    try:
        json.loads(block.code)
    except json.JSONDecodeError:  # JSON lines: one value a line
        for line in block.code.splitlines():
            json.loads(line)


# ------------------------------------------------------------------------- shell blocks


def shell_commands(code: str) -> Iterator[list[str]]:
    """The commands of a shell block, as argument lists without environment assignments.

    Continuation lines are joined; comments, `&`, `&&`, `;` and pipes separate commands.
    """
    text = code.replace("\\\n", " ")
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        command: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= set(";&|"):
                words = list(command)
                while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                    words.pop(0)  # VAR=value before the program
                if words:
                    yield words
                command = []
            else:
                command.append(token)


def _durable_tools_args(words: list[str]) -> list[str] | None:
    """The arguments of a `durable-tools` command line (also `docker compose exec SERVICE
    durable-tools ...`), or None for another program."""
    if words[:3] == ["docker", "compose", "exec"]:
        words = words[4:]
    if words and (words[0] == "durable-tools" or words[0].endswith("/durable-tools")):
        return words[1:]
    return None


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w.-]+)\s*:", makefile, flags=re.MULTILINE))


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


@pytest.mark.parametrize("block", _of(SHELL))
def test_shell_commands_are_real(block: Block) -> None:
    commands = list(shell_commands(block.code))
    assert commands, f"{block.where}: no command in a shell block"
    for words in commands:
        args = _durable_tools_args(words)
        if args is not None:
            _parses(block, args)
        elif (script := _python_script(words)) is not None:
            where = (ROOT / block.page).parent / script  # run from the page's folder
            file = str(where.resolve().relative_to(ROOT))
            assert file in TESTED_FILES, f"{block.where}: python {script}: no test runs {file}"
        elif words[0] == "make":
            targets = [w for w in words[1:] if "=" not in w]
            assert set(targets) <= _make_targets(), f"{block.where}: make {targets}"
        elif "pip" in words[0] and words[1:2] == ["install"]:
            for word in words:
                if "durable-tools[" in word or "durable_tools-" in word:
                    extras = re.search(r"\[([\w,-]+)\]", word)
                    wanted = set(extras[1].split(",")) if extras else set()
                    assert wanted <= _extras(), f"{block.where}: no extra {wanted - _extras()}"


def _parses(block: Block, args: list[str]) -> None:
    """`durable-tools ARGS` is a command the real parser accepts."""
    parser = build_parser()
    if args == ["--version"]:
        return
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            parsed = parser.parse_args(args)
    except SystemExit:
        pytest.fail(f"{block.where}: durable-tools {shlex.join(args)}\n{errors.getvalue()}")
    assert getattr(parsed, "handler", None), f"{block.where}: {shlex.join(args)} is no command"


def _cheap(args: list[str]) -> bool:
    """Commands that answer at once and change nothing: run them, not only parse them."""
    return args == ["--version"] or (args[:1] == ["tools"] and "--tools" in args)


def _python_script(words: list[str]) -> str | None:
    """The example a `python FILE.py` command runs (tests/test_examples.py runs each)."""
    if words[0] in ("python", "python3") and len(words) == 2 and words[1].endswith(".py"):
        return words[1]
    return None


def test_cheap_commands_run(env: WorkflowEnvironment, tmp_path: Path) -> None:
    environment = myapp_environment(env, tmp_path)
    ran = set()
    for block in BLOCKS:
        if block.lang not in SHELL or block.not_run:
            continue
        for words in shell_commands(block.code):
            args = _durable_tools_args(words)
            if args is None or not _cheap(args) or shlex.join(args) in ran:
                continue
            ran.add(shlex.join(args))
            done = subprocess.run(
                [PROGRAM, *args],
                cwd=EXAMPLES,
                env=environment,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            shown = f"{block.where}: durable-tools {shlex.join(args)}"
            assert done.returncode == 0, f"{shown}\n{done.stdout}{done.stderr}"
    assert "tools --tools myapp.tools" in ran, ran


AGAINST_WORKER = [b for b in BLOCKS if b.against_worker]


def printed_as_shown(printed: str, shown: str) -> list[str]:
    """The lines of `shown` that no line of `printed` matches (`...` stands for anything)."""
    lines = printed.splitlines()
    return [
        line
        for line in shown.splitlines()
        if line.strip()
        and not any(
            re.fullmatch(".*".join(map(re.escape, line.split("..."))), seen) for seen in lines
        )
    ]


def test_blocks_marked_to_run_against_a_worker_run_as_shown(
    env: WorkflowEnvironment, tmp_path: Path
) -> None:
    assert {b.page for b in AGAINST_WORKER} >= {
        "docs/sessions.md",
        "docs/code-mode.md",
        "docs/compaction.md",
    }
    environment = myapp_environment(env, tmp_path)
    with myapp_worker(environment):
        for block in AGAINST_WORKER:
            assert block.lang in SHELL and not block.not_run, block.where
            printed = ""
            for words in shell_commands(block.code):
                args = _durable_tools_args(words)
                assert args is not None, f"{block.where}: only durable-tools commands run here"
                printed += durable_tools(environment, *args).stdout
            missing = printed_as_shown(printed, block.output or "")
            assert not missing, f"{block.where} printed no line like {missing}:\n{printed}"


# ------------------------------------------------------------------------- python blocks

# Runs each block of a JSON list in fresh globals, one after the other, and writes one JSON
# line per block as it ends (a block that hangs still leaves the others' outcomes).
_RUNNER = r"""
import contextlib, io, json, os, signal, sys, time, traceback

blocks = json.load(open(sys.argv[1]))
out = open(sys.argv[2], "a", buffering=1)
sys.path.insert(0, os.getcwd())  # as `python file.py` from this folder would have it


def alarm(signum, frame):
    raise TimeoutError(f"the block took over {sys.argv[3]} s")


signal.signal(signal.SIGALRM, alarm)
for block in blocks:
    printed = io.StringIO()
    started = time.monotonic()
    signal.alarm(int(sys.argv[3]))
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(block["code"], block["where"], "exec"), {"__name__": "__main__"})
        error = None
    except BaseException:
        error = traceback.format_exc()
    finally:
        signal.alarm(0)
    seconds = round(time.monotonic() - started, 2)
    out.write(json.dumps({"where": block["where"], "error": error, "stdout": printed.getvalue(),
                          "seconds": seconds}) + "\n")
out.close()
sys.stdout.flush()
os._exit(0)  # no interpreter teardown: the Temporal SDK's threads (sdk-python#300)
"""

PYTHON_BLOCKS = [b for b in BLOCKS if b.lang in PYTHON and not b.not_run and not b.snippets]


def _is_pytest_file(block: Block) -> bool:
    """A block of pytest tests: pytest runs it, as docs/testing.md says to."""
    return re.search(r"^(async )?def test_", block.code, flags=re.MULTILINE) is not None


@pytest.mark.parametrize("block", [pytest.param(b, id=b.where) for b in BLOCKS if b.not_run])
def test_blocks_that_do_not_run_still_compile(block: Block) -> None:
    if block.lang in PYTHON:  # top-level await: such a block is a fragment of async code
        compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    else:
        for words in shell_commands(block.code):
            args = _durable_tools_args(words)
            if args is not None:
                _parses(block, args)


@pytest.fixture(scope="module")
def python_outcomes(
    env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Every Python block's outcome, run once for the module."""
    here = tmp_path_factory.mktemp("docs-code")
    shutil.copytree(EXAMPLES / "myapp", here / "myapp", ignore=shutil.ignore_patterns("__py*"))
    environment = myapp_environment(env, here)
    runnable = [b for b in PYTHON_BLOCKS if _copied_example(b) is None and not _is_pytest_file(b)]
    (here / "blocks.json").write_text(
        json.dumps([{"where": b.where, "code": b.code} for b in runnable])
    )
    results = here / "results.jsonl"
    with myapp_worker(environment):
        done = subprocess.run(
            [sys.executable, "-c", _RUNNER, "blocks.json", str(results), str(BLOCK_TIMEOUT)],
            cwd=here,
            env=environment,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT * 4,
            check=False,
        )
    lines = results.read_text().splitlines() if results.exists() else []
    outcomes = {o["where"]: o for o in map(json.loads, lines)}
    outcomes["runner"] = {"returncode": done.returncode, "stderr": done.stderr[-4000:]}
    return outcomes


@pytest.mark.parametrize("block", [pytest.param(b, id=b.where) for b in PYTHON_BLOCKS])
def test_python_block_runs(block: Block, python_outcomes: dict[str, dict[str, Any]]) -> None:
    copied = _copied_example(block)
    if copied is not None:  # tests/test_examples.py runs it, and checks the README's copy
        assert block.page == "README.md", f"{block.where}: include examples/{copied} instead"
        return
    if _is_pytest_file(block):
        return  # test_pytest_blocks_pass runs it
    outcome = python_outcomes.get(block.where)
    assert outcome is not None, f"{block.where} never finished: {python_outcomes['runner']}"
    assert outcome["error"] is None, f"{block.where}\n{outcome['error']}\n{outcome['stdout']}"


def test_pytest_blocks_pass(env: WorkflowEnvironment, tmp_path: Path) -> None:
    """The pages' pytest files pass under the settings the same page shows."""
    for page in {b.page for b in PYTHON_BLOCKS if _is_pytest_file(b)}:
        blocks = [b for b in PYTHON_BLOCKS if b.page == page]
        settings = [tomllib.loads(b.code) for b in BLOCKS if b.page == page and b.lang == "toml"]
        ini = next(s["tool"]["pytest"]["ini_options"] for s in settings if "tool" in s)
        here = tmp_path / page.replace("/", "_")
        shutil.copytree(EXAMPLES / "myapp", here / "myapp", ignore=shutil.ignore_patterns("__py*"))
        files = []
        for number, block in enumerate(b for b in blocks if _is_pytest_file(b)):
            files.append(f"test_block_{number}.py")
            (here / files[-1]).write_text(block.code)
        overrides = [f"-o{key}={value}" for key, value in ini.items()]
        environment = myapp_environment(env, here)
        # `temporal` on the PATH, as in the virtualenv a reader has activated.
        environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *overrides, *files],
            cwd=here,
            env={
                **environment,
                "PYTHONPATH": f"{here}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            },
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, f"{page}\n{done.stdout}{done.stderr}"
        assert f"{len(files)} passed" in done.stdout, done.stdout
