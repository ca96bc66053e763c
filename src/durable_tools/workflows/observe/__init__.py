"""What operators see of a run: search attributes and the UI's current details, notifications
of waits, and approval metrics.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
