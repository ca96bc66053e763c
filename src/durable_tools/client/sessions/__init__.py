"""A session's messages from the client: send (starting the session if need be), wait for
the answer, close (`_messages`).

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
