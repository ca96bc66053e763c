"""`AgentRun`, the handle on one run (`_agent_run`), and what it calls: the decide operation's
typed errors and checks (`_decide`), tool progress (`_progress`), how a cancelled run ended
(`_cancelled`), where a host holds a run's handlers (`_hosts`), and following a run from
outside for the CLI and the demo (`_watch`).

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
