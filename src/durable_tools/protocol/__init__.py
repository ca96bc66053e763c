"""What the workflow, its activities, the client and the CLI all read: the wire types of a
run (configuration, input, result, records, pending waits, the approval policy), the limits
on what a run accepts, the event names of its audit stream, activity options, and who a
decider is (`_deciders`: the policy's wire type checks its names with it). The policy's
rules are pure functions one layer up, in `durable_tools.policy`.

Nothing here imports Temporal's workflow API or keeps state, so every side can import it,
and a worker passes it through the sandbox once. Its public names are exported by their
public homes (`durable_tools.workflows`, `durable_tools.callbacks`, ...); this package only
groups the modules.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
