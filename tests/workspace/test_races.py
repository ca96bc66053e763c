"""Time-of-check/time-of-use: a directory swapped for a symlink mid-call never leads outside.

The swap is made deterministic by a hook on `os.open` and `os.scandir`: it happens just
before the k-th of those calls a tool makes, for every k. Whatever the moment, the tool
must refuse or act on what is really inside the root; nothing outside is read, listed,
written or created.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from durable_tools import ToolContext, ToolRegistry
from durable_tools.workspace import Workspace, WorkspacePathError, register_workspace_tools

SECRET = "outside secret, do not touch\n"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a" / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "sub" / "file.txt").write_text("inside do\n")
    (outside / "file.txt").write_text(SECRET)
    (outside / "only-outside.txt").write_text(SECRET)
    return {"root": root, "outside": outside}


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() if p.is_file() else b"dir"
        for p in sorted(directory.rglob("*"))
    }


def swap_before_use(
    monkeypatch: pytest.MonkeyPatch, layout: dict[str, Path], at: int
) -> Callable[[], bool]:
    """Make the `at`-th os.open or os.scandir (from 0) first swap root/a/sub for a link."""
    count = 0
    swapped = False

    def hook(real: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(*args: Any, **kwargs: Any) -> Any:
            nonlocal count, swapped
            if count == at and not swapped:
                sub = layout["root"] / "a" / "sub"
                os.rename(sub, layout["root"] / "a" / "old")
                os.symlink(layout["outside"], sub)
                swapped = True
            count += 1
            return real(*args, **kwargs)

        return hooked

    monkeypatch.setattr(os, "open", hook(os.open))
    monkeypatch.setattr(os, "scandir", hook(os.scandir))
    return lambda: swapped


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "a/sub/file.txt"}),
    ("write_file", {"path": "a/sub/file.txt", "content": "pwned"}),
    ("write_file", {"path": "a/sub/new/deeper.txt", "content": "pwned"}),
    ("edit_file", {"path": "a/sub/file.txt", "old_text": "do", "new_text": "pwned"}),
    ("list_files", {"path": "a/sub"}),
    ("search_files", {"pattern": "outside.secret", "path": "a/sub"}),
    ("search_files", {"pattern": "outside.secret", "path": "a/sub/file.txt"}),
]


@pytest.mark.parametrize("at", range(6))
@pytest.mark.parametrize(
    ("name", "arguments"), CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)]
)
async def test_a_swap_at_any_moment_never_reaches_outside(
    layout: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    arguments: dict[str, Any],
    at: int,
):
    registry = ToolRegistry()
    register_workspace_tools(registry, layout["root"], approval_for_writes=False)
    before = snapshot(layout["outside"])
    swapped = swap_before_use(monkeypatch, layout, at)
    context = ToolContext(tool_call_id="c", tool_name=name)
    try:
        result = await registry.invoke(name, arguments, context)
    except WorkspacePathError as refused:
        assert swapped() and refused.rule in ("symlink", "not_found"), refused.message
    else:
        shown = result.content[0].text or ""
        assert "outside secret" not in shown and "only-outside" not in shown, shown
    monkeypatch.undo()
    assert snapshot(layout["outside"]) == before  # nothing outside read into, or written


def test_walking_resolves_inner_links_itself(tmp_path: Path):
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "f.txt").write_text("x")
    os.symlink("../f.txt", root / "d" / "up")  # relative, climbs but stays inside
    os.symlink(str(root / "f.txt"), root / "d" / "abs")  # absolute, inside
    os.symlink("loop", root / "loop")
    workspace = Workspace(root)
    assert workspace.resolve("d/up", want="file") == root / "f.txt"
    assert workspace.resolve("d/abs", want="file") == root / "f.txt"
    with pytest.raises(WorkspacePathError, match="too many levels of symlinks"):
        workspace.resolve("loop")


async def test_writes_through_a_hard_link_never_change_the_file_outside(tmp_path: Path):
    root, outside = tmp_path / "root", tmp_path / "outside.txt"
    root.mkdir()
    outside.write_text(SECRET)
    os.link(outside, root / "linked.txt")  # a path check cannot tell this from a plain file
    registry = ToolRegistry()
    register_workspace_tools(registry, root, approval_for_writes=False)
    context = ToolContext(tool_call_id="c", tool_name="write_file")
    await registry.invoke(
        "edit_file", {"path": "linked.txt", "old_text": "do", "new_text": "x"}, context
    )
    assert (root / "linked.txt").read_text() == "outside secret, x not touch\n"
    await registry.invoke("write_file", {"path": "linked.txt", "content": "new"}, context)
    assert (root / "linked.txt").read_text() == "new"
    assert outside.read_text() == SECRET  # the rename replaced the entry, not the inode
    assert os.stat(outside).st_nlink == 1
