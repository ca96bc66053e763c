"""Answering the question a run's MCP tool asks its user (`_answer`).

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
