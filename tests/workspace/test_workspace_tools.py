"""Each workspace tool's behaviour, and an approval-gated write on the dev server."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import (
    DurableTools,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
    ToolResult,
)
from durable_tools.workspace import register_workspace_tools
from support import answer, calls, running_worker, wait_for, write_script


def tools(root: Path, **options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    register_workspace_tools(registry, root, **options)
    return registry


async def call(registry: ToolRegistry, name: str, **arguments: Any) -> ToolResult:
    return await registry.invoke(name, arguments, ToolContext(tool_call_id="c1", tool_name=name))


def text(result: ToolResult) -> str:
    return result.content[0].text or ""


def test_safety_metadata_is_truthful(tmp_path: Path):
    registry = tools(tmp_path, prefix="ws_")
    assert registry.names() == [
        "ws_read_file",
        "ws_write_file",
        "ws_edit_file",
        "ws_list_files",
        "ws_search_files",
        "ws_run_command",
    ]
    for name in ("ws_read_file", "ws_list_files", "ws_search_files"):
        spec = registry.get(name).spec
        assert spec.safety.read_only and spec.safety.filesystem and not spec.safety.shell
        assert spec.approval == "never" and spec.safety.workspace_root == str(tmp_path.resolve())
    for name in ("ws_write_file", "ws_edit_file"):
        spec = registry.get(name).spec
        assert not spec.safety.read_only and spec.safety.filesystem and spec.approval == "always"
    assert registry.get("ws_write_file").spec.safety.idempotent
    assert not registry.get("ws_edit_file").spec.safety.idempotent
    command = registry.get("ws_run_command").spec
    assert command.safety.shell and command.approval == "always" and not command.safety.read_only
    assert command.policy.start_to_close_timeout > 30  # the command timeout plus a margin
    relaxed = tools(tmp_path, allow_commands=False, approval_for_writes=False)
    assert "run_command" not in relaxed
    assert relaxed.get("write_file").spec.approval == "never"


async def test_read_file_with_offsets_limits_and_bounds(tmp_path: Path):
    (tmp_path / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    registry = tools(tmp_path, max_output_bytes=40)
    assert text(await call(registry, "read_file", path="lines.txt", offset=3, limit=2)) == (
        "line 3\nline 4\n\n[lines 3-4 of 10; call read_file with offset=5 for more]"
    )
    bounded = text(await call(registry, "read_file", path="lines.txt"))
    assert (
        bounded.startswith("line 1\n")
        and "[lines 1-5 of 10; call read_file with offset=6" in bounded
    )
    assert text(await call(registry, "read_file", path="empty.txt")) == "(empty.txt is empty)"
    assert "past the end" in text(await call(registry, "read_file", path="lines.txt", offset=99))
    with pytest.raises(ToolExecutionError, match="binary"):
        await call(registry, "read_file", path="blob.bin")
    with pytest.raises(ToolExecutionError, match=r"\(not_found\)"):
        await call(registry, "read_file", path="nope.txt")
    with pytest.raises(ToolExecutionError, match=r"\(is_a_directory\)"):
        await call(registry, "read_file", path=".")
    full = tools(tmp_path)
    assert text(await call(full, "read_file", path=str(tmp_path / "lines.txt"))).count("\n") == 10


async def test_write_and_edit(tmp_path: Path):
    registry = tools(tmp_path)
    result = await call(registry, "write_file", path="src/app/main.py", content="x = 1\ny = 1\n")
    assert text(result) == "wrote 12 bytes to src/app/main.py (new file)"
    target = tmp_path / "src/app/main.py"
    os.chmod(target, 0o600)
    result = await call(registry, "write_file", path="src/app/main.py", content="x = 1\ny = 1\n")
    assert "(overwritten)" in text(result) and (target.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["main.py"]  # no temporary left

    with pytest.raises(ToolExecutionError, match="occurs 2 times") as twice:
        await call(registry, "edit_file", path="src/app/main.py", old_text="= 1", new_text="= 2")
    assert not twice.value.retryable
    assert target.read_text() == "x = 1\ny = 1\n"  # nothing changed
    edited = await call(
        registry, "edit_file", path="src/app/main.py", old_text="y = 1", new_text="y = 3"
    )
    assert text(edited) == "replaced 1 occurrence in src/app/main.py"
    both = await call(
        registry, "edit_file", path="src/app/main.py", old_text=" = ", new_text="=", count=5
    )
    assert text(both) == "replaced 2 occurrences in src/app/main.py"
    assert target.read_text() == "x=1\ny=3\n"
    with pytest.raises(ToolExecutionError, match="was not found"):
        await call(registry, "edit_file", path="src/app/main.py", old_text="zzz", new_text="")
    with pytest.raises(ToolExecutionError, match="empty"):
        await call(registry, "edit_file", path="src/app/main.py", old_text="", new_text="a")


async def test_list_and_search(tmp_path: Path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("needle in git\n")
    (tmp_path / "pkg" / "a.py").write_text("import os\nneedle = 1\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("needle = 2\n" * 5)
    (tmp_path / "pkg" / "notes.txt").write_text("a needle\n")
    (tmp_path / "pkg" / "blob.bin").write_bytes(b"needle\x00")
    os.symlink("pkg/a.py", tmp_path / "alias.py")
    registry = tools(tmp_path, max_matches=4)
    listing = text(await call(registry, "list_files"))
    assert listing.splitlines() == [".git/", "alias.py@", "pkg/"]
    recursive = text(await call(registry, "list_files", path="pkg", recursive=True))
    assert recursive.splitlines() == ["a.py", "blob.bin", "notes.txt", "sub/", "sub/b.py"]
    assert text(
        await call(registry, "list_files", recursive=True, pattern="*.py")
    ).splitlines() == [
        "alias.py@",
        "pkg/a.py",
        "pkg/sub/b.py",
    ]
    found = text(await call(registry, "search_files", pattern=r"^needle = \d", glob="*.py"))
    assert found.splitlines()[0].startswith("4 matches in 2 files (stopped at the limit of 4")
    assert "pkg/a.py:2: needle = 1" in found and ".git" not in found
    one = text(await call(registry, "search_files", pattern="needle", path="pkg/notes.txt"))
    assert one == "1 match in 1 file\npkg/notes.txt:1: a needle"
    assert text(await call(registry, "search_files", pattern="absent")) == "no matches for 'absent'"
    with pytest.raises(ToolExecutionError, match="invalid regular expression"):
        await call(registry, "search_files", pattern="(")
    small = tools(tmp_path, max_entries=2)
    assert "[... 3 more entries not shown" in text(
        await call(small, "list_files", path="pkg", recursive=True)
    )


async def test_run_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.setenv("DURABLE_TOOLS_SECRET_API", "sk-worker-secret")
    registry = tools(tmp_path, max_output_bytes=1000, command_timeout=5)
    py = sys.executable
    done = await call(
        registry, "run_command", command=[py, "-c", "import os; print(os.getcwd())"], cwd="sub"
    )
    assert done.structured["exit_code"] == 0
    assert done.structured["stdout"].strip() == str((tmp_path / "sub").resolve())
    assert "exit code 0" in text(done)
    failed = await call(registry, "run_command", command=f"{py} -c 'import sys; sys.exit(3)'")
    assert failed.structured["exit_code"] == 3 and not failed.is_error
    env = await call(registry, "run_command", command=["env"])
    assert "sk-worker-secret" not in env.structured["stdout"]
    assert f"HOME={tmp_path.resolve()}" in env.structured["stdout"]
    # No shell: the metacharacters are plain arguments.
    echoed = await call(registry, "run_command", command="echo $HOME; touch hacked")
    assert echoed.structured["stdout"] == "$HOME; touch hacked\n"
    assert not (tmp_path / "hacked").exists()

    loud = await call(
        registry, "run_command", command=[py, "-c", "print('a' * 200000); print('END')"]
    )
    assert loud.structured["truncated"] and loud.structured["stdout_bytes"] == 200005
    assert len(loud.structured["stdout"]) < 1100 and loud.structured["stdout"].endswith("END\n")
    assert "bytes omitted" in loud.structured["stdout"]

    started = time.monotonic()
    slow = await call(
        registry,
        "run_command",
        command=["sh", "-c", "echo started; sleep 30 & sleep 30"],
        timeout=0.5,
    )
    assert time.monotonic() - started < 4
    assert slow.is_error and slow.structured["timed_out"] and slow.structured["exit_code"] is None
    assert slow.structured["stdout"] == "started\n" and "timed out after 0.5s" in text(slow)

    with pytest.raises(ToolExecutionError, match="command not found") as missing:
        await call(registry, "run_command", command=["no-such-program-xyz"])
    assert not missing.value.retryable
    shell = tools(tmp_path, shell_commands=True, prefix="sh_")
    piped = await call(shell, "sh_run_command", command="printf 'a\\nb\\n' | wc -l")
    assert piped.structured["stdout"].strip() == "2"


# ----------------------------------------------------------------- end to end


async def test_write_waits_for_approval_then_runs(client: Client, task_queue: str, tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    registry = ToolRegistry()
    register_workspace_tools(registry, root)
    model = write_script(
        tmp_path,
        [
            calls(("w1", "write_file", {"path": "notes/todo.md", "content": "- ship it\n"})),
            calls(("r1", "read_file", {"path": "notes/todo.md"})),
            answer("written"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("write a todo", model=model)
        snapshot = await wait_for(run, lambda s: "w1" in {p.call_id for p in s.pending_approvals})
        assert snapshot.status == RunStatus.AWAITING_APPROVAL
        assert snapshot.pending_approvals[0].tool == "write_file"
        assert not (root / "notes").exists()  # nothing written before the decision
        assert await run.approve("w1", decider="alice") == "approved"
        result = await run.result()
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "written"
    assert (root / "notes" / "todo.md").read_text() == "- ship it\n"
    replies = [m.content for m in conversation if m.role == "tool"]
    assert "wrote 10 bytes to notes/todo.md (new file)" in (replies[0] or "")
    assert replies[1] == "- ship it\n"
