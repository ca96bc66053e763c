"""The route of one tool call, in order: validate it and count it against the tool's
budget (`_validate`), the gates (`workflows.gates`), execute it (`_execute`, a tool
activity, a sub-agent or a flow), record it (`_record`); `_replies` builds every message the
model reads about it, `_pipeline` runs a turn's calls.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
