"""The README's durable example runs as written, against the session's dev server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parents[1]


def run_example(env: WorkflowEnvironment, tmp_path: Path, name: str) -> dict[str, str]:
    """Run `examples/NAME` against the session's server; its `key: value` output lines."""
    environment = {
        **os.environ,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "DURABLE_TOOLS_ARTIFACTS": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(line.split(": ", 1) for line in done.stdout.strip().splitlines())


def test_durable_run_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "durable_run.py")
    assert lines["waiting for approval of"] == "pay"
    assert lines["status"] == "completed"
    assert lines["answer"] == "Paid 5.00 from acc-1."


def test_custom_model_adapter_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "custom_model_adapter.py")
    assert lines == {"status": "completed", "answer": "The sum is 42."}


def test_readme_shows_the_examples_as_they_are() -> None:
    readme = (ROOT / "README.md").read_text()
    for example in ("define_a_tool.py", "durable_run.py"):
        code = (ROOT / "examples" / example).read_text()
        body = code.split('"""', 2)[2].strip()  # the module docstring is not shown
        assert body in readme, f"README's copy of examples/{example} is out of date"
