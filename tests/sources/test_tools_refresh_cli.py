"""`durable-tools tools refresh --project FILE`, as users run it, against an OpenAPI
document served on 127.0.0.1 that changes between two runs of the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openapi_changing_server import ChangingApi, document, item_operation

CLI = [str(Path(sys.executable).parent / "durable-tools")]


def refresh(project: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "tools", "refresh", "--project", str(project), *flags],
        cwd=project.parent,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_refresh_prints_what_changed_since_the_last_read(
    tmp_path: Path, changing_api: ChangingApi
) -> None:
    project = tmp_path / "durable-tools.toml"
    project.write_text(
        f'[[openapi]]\ndocument = "{changing_api.document_url}"\nrefresh_seconds = 60\n'
    )
    first = refresh(project)
    assert first.returncode == 0, first.stderr
    assert "first read: 2 tools" in first.stdout
    assert (tmp_path / ".durable-tools" / "tools-read.json").is_file()

    again = refresh(project)
    assert again.returncode == 0, again.stderr
    assert "no changes since the last read" in again.stdout
    assert "refresh_seconds" in again.stdout  # says how running workers follow

    changing_api.document = document(
        changing_api.base_url,
        {
            "/v1/items/{item_id}": item_operation("v1", description="Read one item, anew."),
            "/v1/items": {
                "get": {
                    "operationId": "list_items",
                    "responses": {"200": {"description": "all"}},
                }
            },
        },
    )
    changed = refresh(project, "--json")
    assert changed.returncode == 0, changed.stderr
    assert json.loads(changed.stdout) == {
        "added": ["list_items"],
        "changed": ["get_item"],
        "removed": ["count_items"],
        "first_read": False,
    }


def test_refresh_of_a_source_that_cannot_be_read_fails_naming_it(
    tmp_path: Path, changing_api: ChangingApi
) -> None:
    project = tmp_path / "durable-tools.toml"
    project.write_text(f'[[openapi]]\ndocument = "{changing_api.document_url}"\n')
    assert refresh(project).returncode == 0
    changing_api.failing = True
    failed = refresh(project)
    assert failed.returncode != 0
    assert "500" in failed.stderr and "Traceback" not in failed.stderr
    # The last good read is kept: the next refresh compares with it.
    changing_api.failing = False
    assert "no changes since the last read" in refresh(project).stdout


def test_refresh_refuses_a_schedule_that_would_read_in_a_busy_loop(tmp_path: Path) -> None:
    project = tmp_path / "durable-tools.toml"
    project.write_text(
        '[[openapi]]\ndocument = "http://127.0.0.1:9/x.json"\nrefresh_seconds = 0.01\n'
    )
    out = refresh(project)
    assert out.returncode != 0 and "refresh_seconds" in out.stderr
