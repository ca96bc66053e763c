"""The durable waits a call can pause in, on one primitive (`_wait`, `_wait_maps`): the
approval gate (with standing grants and auto mode), OAuth authorization, callback tools and
an MCP server's questions for the user; `_approval_gate` is the one place a call (or a
call already waiting, when the policy changes) asks the pure `decide`, and `_decisions`
checks and applies a person's answer.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
