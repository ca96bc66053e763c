"""The agent loop: the workflow (`_agent`), the loop shared with an embedded run
(`_runner`, `_embed`), one model turn, the handler table, steering, the final answer,
continue-as-new, token usage and the run's state.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
