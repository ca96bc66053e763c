"""The project's custom search attributes, in one place.

Workflows upsert them, the dev server registers them, and operators filter on them in the
Temporal UI (`AgentStatus="awaiting_approval"`). This module imports only
`temporalio.common`, so workflow code can import it inside the sandbox.
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

__all__ = [
    "AGENT_NAME",
    "AGENT_STATUS",
    "AWAITING_TOOL",
    "PENDING_APPROVALS",
    "SEARCH_ATTRIBUTES",
    "TOKENS",
]

AGENT_STATUS = SearchAttributeKey.for_keyword("AgentStatus")
"""Where a run stands: running, awaiting_approval, awaiting_authorization, awaiting_input,
awaiting_callback, completed, ..."""
AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")
"""The agent the run belongs to."""
PENDING_APPROVALS = SearchAttributeKey.for_int("PendingApprovals")
"""How many tool calls wait on a person's decision."""
AWAITING_TOOL = SearchAttributeKey.for_keyword("AwaitingTool")
"""The tool whose call the run waits on (approval or authorization), if any."""

TOKENS = SearchAttributeKey.for_int("DurableToolsTokens")
"""Tokens the run (its whole continue-as-new chain) has spent, input and output together.

Upserted with the other attributes (when the status changes: a pause, a resume, the end),
so never more than once a turn and no extra history event; a finished run holds its total.
Only runs started while the namespace has it registered carry it (see `DurableTools.start`):
an upsert of an unregistered attribute would fail every workflow task of the run."""

SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[str] | SearchAttributeKey[int], ...] = (
    AGENT_STATUS,
    AGENT_NAME,
    PENDING_APPROVALS,
    AWAITING_TOOL,
    TOKENS,
)
"""Every custom search attribute the project uses; each namespace must register them."""
