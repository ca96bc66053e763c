"""What every stage of a run works on: the run's state (`RunState`) and its parts by role
(the catalog, the calls, the gates' policy and waits, the model's use), the validated
call, every reply the model reads about a tool call, and local activities that fail the
way regular ones do.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
