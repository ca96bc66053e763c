"""examples/define_a_tool.py (shown by docs/tools.md) runs and prints what it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "define_a_tool.py"


def test_example_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.strip().splitlines())
    schema = json.loads(lines["schema"])
    assert schema == {
        "additionalProperties": False,
        "properties": {
            "city": {"description": 'The city name, e.g. "Oslo".', "type": "string"},
            "units": {
                "default": "metric",
                "description": '"metric" or "imperial".',
                "type": "string",
            },
        },
        "required": ["city"],
        "type": "object",
    }
    assert lines["retry timeouts"] == "True"
    assert json.loads(lines["result"]) == {"city": "Oslo", "temperature": 21, "units": "metric"}
