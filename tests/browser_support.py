"""The real browser of the browser tests: Debian's chromium, driven by Playwright."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

CHROMIUM = os.environ.get("DURABLE_TOOLS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_browser() -> Any:
    """Playwright's async API, once chromium is there; call it at module level.

    Without Playwright or chromium the calling test module is skipped, except under CI,
    which installs both (.ci/run) and must not skip: there it fails.
    """
    api = pytest.importorskip("playwright.async_api")
    if shutil.which(CHROMIUM) is None:
        # A developer without it gets a clear reason.
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            raise RuntimeError(f"no chromium at {CHROMIUM}: `make test` installs it (make browser)")
        pytest.skip(
            f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True
        )
    return api


SCREENSHOTS_ENV = "DURABLE_TOOLS_SCREENSHOTS"
"""A directory: the browser tests save the pictures of the docs there (`make screenshots`)."""


async def screenshot(page: Any, name: str, *, full_page: bool = False) -> None:
    """Save `page` as `$DURABLE_TOOLS_SCREENSHOTS/name` when that is set (else nothing)."""
    directory = os.environ.get(SCREENSHOTS_ENV)
    if directory:
        await page.screenshot(path=os.path.join(directory, name), full_page=full_page)
