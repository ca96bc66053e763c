"""The saved views docs/operations.md gives operators: the "waiting on a person" query names
every status of a run that waits (`WAITING_STATUSES`), and the real server takes it."""

from __future__ import annotations

import re
from pathlib import Path

from temporalio.client import Client

from durable_tools.protocol._types import WAITING_STATUSES

OPERATIONS = Path(__file__).resolve().parent.parent / "docs" / "operations.md"


def saved_view(name: str) -> str:
    """The query of the saved view `name` in the operations page's table."""
    for line in OPERATIONS.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] == name:
            return cells[1].strip("`")
    raise AssertionError(f"no saved view {name!r} in {OPERATIONS}")


def test_the_waiting_view_names_every_waiting_status() -> None:
    query = saved_view("Waiting on a person")
    [listed] = re.findall(r"AgentStatus IN \(([^)]*)\)", query)
    named = {value.strip().strip('"') for value in listed.split(",")}
    assert named == {status.value for status in WAITING_STATUSES}


async def test_the_waiting_view_is_a_query_the_server_takes(client: Client) -> None:
    async for _ in client.list_workflows(saved_view("Waiting on a person"), limit=1):
        pass
