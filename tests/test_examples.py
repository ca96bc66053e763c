"""The README's durable example runs as written, against the session's dev server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parents[1]


# Runs an example as `python examples/NAME` would, and says on stdout whether the interpreter
# was torn down at exit: an atexit hook runs only then.
_RUN_WITH_TEARDOWN_PROBE = """
import atexit, runpy, sys
atexit.register(lambda: print("interpreter teardown: ran", flush=True))
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def run_example(env: WorkflowEnvironment, tmp_path: Path, name: str) -> dict[str, str]:
    """Run `examples/NAME` against the session's server; its `key: value` output lines."""
    environment = {
        **os.environ,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "DURABLE_TOOLS_ARTIFACTS": str(tmp_path),
        "PYTHONFAULTHANDLER": "1",  # a crash shows every thread's Python stack
    }
    done = subprocess.run(
        [sys.executable, "-c", _RUN_WITH_TEARDOWN_PROBE, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, f"exit code {done.returncode}\n{done.stdout}\n{done.stderr}"
    return dict(line.split(": ", 1) for line in done.stdout.strip().splitlines())


def test_durable_run_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "durable_run.py")
    assert lines["waiting for approval of"] == "pay"
    assert lines["status"] == "completed"
    assert lines["answer"] == "Paid 5.00 from acc-1."
    # The Temporal SDK's Rust threads outlive the event loop; a finalizing interpreter can
    # then crash (SIGSEGV, temporalio/sdk-python#300): the example leaves without teardown.
    assert "interpreter teardown" not in lines


def test_custom_model_adapter_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "custom_model_adapter.py")
    assert lines == {"status": "completed", "answer": "The sum is 42."}  # and no teardown


def test_readme_shows_the_examples_as_they_are() -> None:
    readme = (ROOT / "README.md").read_text()
    for example in ("define_a_tool.py", "durable_run.py"):
        code = (ROOT / "examples" / example).read_text()
        body = code.split('"""', 2)[2].strip()  # the module docstring is not shown
        assert body in readme, f"README's copy of examples/{example} is out of date"
