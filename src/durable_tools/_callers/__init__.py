"""Who is calling a web surface of the project (the inbox, the codec server): bearer tokens
from the tokens file, login sessions and their logouts, a trusted proxy's user header,
and the request body's bound.

Shared by `durable_tools.inbox` (which exports the public names) and
`durable_tools.codec.server`, so that neither imports the other.
"""

__all__: list[str] = []
