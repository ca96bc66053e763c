"""Without the `agui` extra, importing the endpoint says in one line what to install."""

from __future__ import annotations

import subprocess
import sys

from durable_tools._extras import install_hint

CHECK = """
import sys
sys.modules["ag_ui"] = None  # as if ag-ui-protocol were not installed
try:
    import durable_tools.agui
except ImportError as error:
    print(type(error).__name__, error)
"""


def test_a_missing_extra_names_the_install_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=120
    )
    line = done.stdout.strip()
    assert line.startswith("MissingExtraError the AG-UI endpoint needs the agui extra: pip install")
    assert install_hint("agui") in line  # the packages of the extra, as installed
