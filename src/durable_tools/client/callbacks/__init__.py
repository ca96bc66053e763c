"""Callback tools served from the client: poll a run's published calls, run them here,
answer them (`_serve`; the public names are in `durable_tools.callbacks`).

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
