"""Which runs `durable-tools runs` and `pending` list: `--agent`, `--user`, `--tenant`,
`--tool`, `--since`.

The agent, the awaited tool and the start time are search attributes, filtered by the
server in the visibility query. A value enters the query only as one single-quoted literal
(a quote doubled, as SQL escapes it); a value holding what Temporal's visibility stores
cannot match reliably (a backslash, a double quote, a control character, a quote at either
end) is refused with one line rather than searched for wrongly. The user and tenant a run
acts for are no search attributes: they are read from each run's start (its first history
event), newest run first, at most `SCAN_LIMIT` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError

from durable_tools import search_attributes as sa
from durable_tools._durations import MAX_DURATION_SECONDS
from durable_tools.tools._context import Identity
from durable_tools.workflows import AgentInput

from ._errors import CliError

__all__ = [
    "MAX_FILTER_CHARS",
    "SCAN_LIMIT",
    "RunFilters",
    "Scan",
    "add_filter_flags",
    "filters_from",
    "literal",
    "parse_since",
    "scan_runs",
    "visibility_query",
]

MAX_FILTER_CHARS = 200
"""The longest filter value (an agent's name is at most 200 characters too)."""

SCAN_LIMIT = 1000
"""Most runs whose start a `--user`/`--tenant` filter reads before it stops looking."""

_STARTS_READ_AT_ONCE = 16

# Temporal's visibility stores parse a backslash or a double quote in a literal in their
# own ways (the SQLite one here matches neither, however escaped); control characters
# have no business in a name. Refused, so a filter never silently matches the wrong runs.
_UNMATCHABLE = re.compile(r'[\\"\x00-\x1f\x7f-\x9f\u2028\u2029]')
_AGO = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


@dataclass(frozen=True)
class RunFilters:
    """What `--agent`, `--user`, `--tenant`, `--tool` and `--since` ask for (None: any)."""

    agent: str | None = None
    user: str | None = None
    tenant: str | None = None
    tool: str | None = None
    since: datetime | None = None

    def identity_wanted(self) -> bool:
        """Whether runs must be read one by one (the user and tenant are in no index)."""
        return self.user is not None or self.tenant is not None

    def identity_matches(self, identity: Identity) -> bool:
        return (self.user is None or identity.user == self.user) and (
            self.tenant is None or identity.tenant == self.tenant
        )


def add_filter_flags(parser: argparse.ArgumentParser) -> None:
    """`--agent`, `--user`, `--tenant`, `--tool` and `--since`."""
    group = parser.add_argument_group("filters", "Each narrows the list; together, all must hold.")
    group.add_argument("--agent", metavar="NAME", help="only runs of this agent (AgentName)")
    group.add_argument("--user", metavar="USER", help="only runs acting for this user")
    group.add_argument("--tenant", metavar="TENANT", help="only runs acting for this tenant")
    group.add_argument(
        "--tool",
        metavar="TOOL",
        help="only runs waiting on a call of this tool (for `runs`: the AwaitingTool attribute)",
    )
    group.add_argument(
        "--since",
        metavar="WHEN",
        help="only runs started since then: an age (30m, 2h, 7d, 1w) or an ISO 8601 time "
        "(UTC without an offset)",
    )


def literal(value: str, flag: str) -> str:
    """`value` as one single-quoted visibility-query literal.

    Raises:
        CliError: a value too long, or holding a character no store matches reliably.
    """
    if len(value) > MAX_FILTER_CHARS:
        raise CliError(f"{flag} is too long ({len(value)} characters, at most {MAX_FILTER_CHARS})")
    if not value:
        raise CliError(f"{flag} is empty")
    if _UNMATCHABLE.search(value):
        raise CliError(
            f"{flag} {value[:60]!a} holds a backslash, a double quote or a control "
            "character, which Temporal's visibility cannot match reliably"
        )
    if value.startswith("'") or value.endswith("'"):
        # Temporal trims a literal's outer quotes once more after parsing it: such a
        # value would be searched for without them.
        raise CliError(
            f"{flag} {value[:60]!a} starts or ends with a quote, which Temporal's "
            "visibility cannot match reliably"
        )
    return "'" + value.replace("'", "''") + "'"


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The moment `--since` names: an age before `now` (`2h`) or an ISO 8601 time.

    Raises:
        CliError: neither form, or an age over ten years.
    """
    now = now or datetime.now(UTC)
    ago = _AGO.fullmatch(text.strip())
    if ago:
        seconds = float(ago.group(1)) * _UNIT_SECONDS[ago.group(2)]
        if seconds > MAX_DURATION_SECONDS:
            raise CliError(f"--since {text!a} reaches back more than ten years")
        return now - timedelta(seconds=seconds)
    try:
        moment = datetime.fromisoformat(text.strip())
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except ValueError:
        raise CliError(
            f"--since {text[:60]!a} is neither an age (30m, 2h, 7d, 1w) nor an ISO 8601 time"
        ) from None
    except OverflowError:  # an offset that pushes year 1 or 9999 out of range
        raise CliError(f"--since {text[:60]!a} is out of range") from None


def filters_from(args: argparse.Namespace) -> RunFilters:
    """The filters given on the command line, each checked."""
    for flag in ("agent", "user", "tenant", "tool"):
        value = getattr(args, flag, None)
        if value is not None:
            literal(value, f"--{flag}")  # the same limits, whether queried or compared
    since = getattr(args, "since", None)
    return RunFilters(
        agent=args.agent,
        user=args.user,
        tenant=args.tenant,
        tool=args.tool,
        since=parse_since(since) if since is not None else None,
    )


def visibility_query(
    base: str, filters: RunFilters, *, status: str | None = None, tool_attribute: bool = True
) -> str:
    """`base` narrowed by the filters the server can apply.

    Args:
        base: The query the command starts from.
        filters: The filters given.
        status: An `AgentStatus` too (`runs --status`).
        tool_attribute: Filter `--tool` by the `AwaitingTool` attribute (else the caller
            checks it).
    """
    clauses = [base]
    if status is not None:
        clauses.append(f"{sa.AGENT_STATUS.name} = {literal(status, '--status')}")
    if filters.agent is not None:
        clauses.append(f"{sa.AGENT_NAME.name} = {literal(filters.agent, '--agent')}")
    if filters.tool is not None and tool_attribute:
        clauses.append(f"{sa.AWAITING_TOOL.name} = {literal(filters.tool, '--tool')}")
    if filters.since is not None:
        # isoformat, not strftime: %Y does not pad years before 1000 to four digits.
        moment = filters.since.astimezone(UTC).isoformat(timespec="microseconds")
        moment = moment.replace("+00:00", "Z")
        clauses.append(f"StartTime >= '{moment}'")
    return " AND ".join(clauses)


async def identity_of(client: Client, execution: WorkflowExecution) -> Identity | None:
    """Who a run acts for, from its start; None when it cannot be read (gone, encrypted
    without the key, not an agent run's input)."""
    handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
    try:
        async for event in handle.fetch_history_events(page_size=1):
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            [started] = await client.data_converter.decode(payloads, [AgentInput])
            return started.identity if isinstance(started, AgentInput) else None
    except (RPCError, KeyError, ValueError, TypeError):
        return None
    return None


@dataclass
class Scan:
    """What a listing found, and what it could not say."""

    runs: list[WorkflowExecution]
    more: bool = False
    """More runs match than the limit let through."""
    unread: int = 0
    """Runs whose start could not be read (so neither kept nor known not to match)."""
    stopped_at: int | None = None
    """The scan read this many runs and stopped before the listing ended."""


async def scan_runs(
    client: Client,
    query: str,
    limit: int,
    keep: Callable[[WorkflowExecution], Awaitable[bool | None]] | None = None,
) -> Scan:
    """The newest `limit` runs matching `query` (and `keep`, when given).

    `keep` says whether a run matches (None: it cannot tell); it is asked of at most
    `SCAN_LIMIT` runs (or `limit` + 1, if more), `_STARTS_READ_AT_ONCE` at a time.
    """
    if keep is None:
        found = [e async for e in client.list_workflows(query, limit=limit + 1)]
        return Scan(found[:limit], more=len(found) > limit)
    scan = Scan([])
    gate = asyncio.Semaphore(_STARTS_READ_AT_ONCE)

    async def ask(execution: WorkflowExecution) -> bool | None:
        async with gate:
            return await keep(execution)

    bound = max(SCAN_LIMIT, limit + 1)
    listing = client.list_workflows(query, limit=bound + 1, page_size=100)
    page: list[WorkflowExecution] = []
    seen = 0
    async for execution in listing:
        if seen == bound:
            scan.stopped_at = seen
            break
        seen += 1
        page.append(execution)
        if len(page) == _STARTS_READ_AT_ONCE * 4:
            if _take(scan, page, await asyncio.gather(*(ask(e) for e in page)), limit):
                return scan
            page = []
    _take(scan, page, await asyncio.gather(*(ask(e) for e in page)), limit)
    return scan


def _take(
    scan: Scan, page: list[WorkflowExecution], answers: list[bool | None], limit: int
) -> bool:
    """Add a page's matching runs to `scan`; True once more than `limit` matched."""
    for execution, answer in zip(page, answers, strict=True):
        if answer is None:
            scan.unread += 1
        elif answer:
            if len(scan.runs) == limit:
                scan.more = True
                return True
            scan.runs.append(execution)
    return False
