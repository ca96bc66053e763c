"""`python -m bench.frameworks` as a user runs it from the repo: both frameworks measured in
one run, the table printed, the figures written where git does not look."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_frameworks_bench_measures_both_side_by_side() -> None:
    def status() -> str:
        return subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    before = status()
    ran = subprocess.run(
        [sys.executable, "-m", "bench.frameworks", "--calls", "2", "--repeats", "1"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    assert status() == before
    figures = json.loads((REPO / "bench" / "results" / "local" / "frameworks.json").read_text())
    assert sorted(figures["frameworks"]) == ["openai_agents", "pydantic_ai"]
    for name, row in figures["frameworks"].items():
        assert row["ours_ms_per_call"] > 0 and row["own_tool_ms_per_call"] > 0, name
        assert f"| {name} |" in ran.stdout
