"""What `DurableTools` sends when it starts a run: the resolved config, search attributes and
versioning override (`_options`), and the Temporal Schedules that start runs on a calendar
(`_schedules`).

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
