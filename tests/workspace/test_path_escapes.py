"""A corpus of path escapes: every workspace tool refuses each one and touches nothing outside."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from durable_tools import ToolContext, ToolError, ToolRegistry
from durable_tools.workspace import Workspace, WorkspacePathError, register_workspace_tools


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    sentinel = outside / "secret.txt"
    sentinel.write_text("do not touch")
    (root / "sub").mkdir()
    (root / "inside.txt").write_text("inside\n")
    os.symlink(sentinel, root / "link_file")
    os.symlink(outside, root / "link_dir")
    os.symlink("../outside", root / "rel_link")
    os.symlink("link_dir", root / "chain")  # inside -> inside -> outside
    os.symlink("/dev/null", root / "dev_link")
    os.mkfifo(root / "fifo")
    os.symlink("inside.txt", root / "ok_link")  # stays inside: allowed
    return {"root": root, "outside": outside, "sentinel": sentinel}


# (path, rule) pairs; every one must be refused by every tool.
ESCAPES: list[tuple[str, str]] = [
    ("../etc/passwd", "parent"),
    ("../outside/secret.txt", "parent"),
    ("a/../../x", "parent"),
    ("sub/../inside.txt", "parent"),  # harmless, but '..' is refused outright
    ("/etc/passwd", "absolute"),
    ("/", "absolute"),
    ("link_file", "symlink"),
    ("link_dir", "symlink"),
    ("link_dir/secret.txt", "symlink"),
    ("link_dir/new.txt", "symlink"),  # a new file whose parent is an escaping symlink
    ("rel_link/secret.txt", "symlink"),
    ("chain/secret.txt", "symlink"),
    ("dev_link", "symlink"),
    ("fifo", "special_file"),
    ("inside.txt\x00.png", "nul"),
    ("~", "home"),
    ("~/.bashrc", "home"),
    ("~root/.ssh/id_rsa", "home"),
    ("a/" * 2100 + "x", "too_long"),
    ("x" * 300, "too_long"),
    ("\uff0e\uff0e/outside/secret.txt", "unicode"),  # fullwidth dots: NFKC gives '..'
    ("\u2025/outside/secret.txt", "unicode"),  # two-dot leader: NFKC gives '..'
    ("\uff0fetc/passwd", "unicode"),  # fullwidth solidus: NFKC gives '/etc/passwd'
    ("\u202etxt.edisni", "control_character"),  # right-to-left override
    ("new\nline.txt", "control_character"),
    ("..\\outside\\secret.txt", "backslash"),
    ("sub\\..\\..\\outside", "backslash"),
    ("C:\\Windows\\win.ini", "backslash"),
    ("C:/Windows/win.ini", "drive"),
]


def calls_for(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("edit_file", {"path": path, "old_text": "do", "new_text": "pwned"}),
        ("list_files", {"path": path}),
        ("search_files", {"pattern": "touch", "path": path}),
        ("run_command", {"command": ["touch", "pwned"], "cwd": path}),
    ]


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(directory)): (
            p.stat().st_mtime_ns,
            p.read_bytes() if p.is_file() else b"",
        )
        for p in sorted(directory.rglob("*"))
    }


@pytest.mark.parametrize(("path", "rule"), ESCAPES, ids=[repr(p)[:40] for p, _ in ESCAPES])
async def test_every_tool_refuses_the_escape(layout: dict[str, Path], path: str, rule: str):
    registry = ToolRegistry()
    register_workspace_tools(registry, layout["root"])
    before = snapshot(layout["outside"])
    root_before = snapshot(layout["root"])
    for name, arguments in calls_for(path):
        with pytest.raises(ToolError) as refused:
            await registry.invoke(name, arguments, ToolContext(tool_call_id="c", tool_name=name))
        error = refused.value
        assert isinstance(error, WorkspacePathError), (name, error)
        assert error.rule == rule, (name, error.message)
        assert not error.retryable
        assert "is refused" in error.message and f"({rule})" in error.message
        assert error.details["path"][:20] == path[:20]  # names the path
    assert snapshot(layout["outside"]) == before
    assert layout["sentinel"].read_text() == "do not touch"
    assert snapshot(layout["root"]) == root_before  # nothing created or changed


def test_absolute_paths_inside_the_root_and_inner_symlinks_are_allowed(layout: dict[str, Path]):
    workspace = Workspace(layout["root"])
    root = layout["root"]
    assert workspace.resolve(str(root / "inside.txt")) == root.resolve() / "inside.txt"
    assert workspace.resolve("./sub/") == root.resolve() / "sub"
    assert workspace.resolve("ok_link", want="file") == root.resolve() / "inside.txt"
    assert workspace.resolve(".", want="dir") == root.resolve()
    new = workspace.resolve_for_write("deep/er/new.txt")
    assert new == root.resolve() / "deep/er/new.txt" and (root / "deep/er").is_dir()
    with pytest.raises(WorkspacePathError, match=r"\(not_found\)"):
        workspace.resolve("missing.txt")
    with pytest.raises(WorkspacePathError, match=r"\(not_a_directory\)"):
        workspace.resolve("inside.txt/x")
    with pytest.raises(WorkspacePathError, match=r"\(is_a_directory\)"):
        workspace.resolve_for_write(".")


def test_a_root_given_through_a_symlink_is_resolved_once(tmp_path: Path, layout: dict[str, Path]):
    alias = tmp_path / "alias"
    os.symlink(layout["root"], alias)
    workspace = Workspace(alias)
    assert workspace.root == layout["root"].resolve()
    assert workspace.resolve(str(alias / "inside.txt")).name == "inside.txt"
    with pytest.raises(ValueError, match="not an existing directory"):
        Workspace(tmp_path / "nope")
