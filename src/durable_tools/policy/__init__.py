"""The approval policy's rules as pure functions: `decide` (which layer decides a call, and
who may approve it), standing grants' constraints, and which decisions a run accepts.

Nothing here does I/O, reads a clock, draws randomness or imports Temporal's workflow API:
the workflow's gates (`durable_tools.workflows.gates`) fetch what `decide` asks for and act
on its verdict; the wire types the rules read (`ApprovalPolicy`, `StandingGrant`, ...) live
in `durable_tools.protocol`, under this package.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
