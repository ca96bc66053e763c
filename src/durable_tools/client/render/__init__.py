"""What the command line prints, as pure functions from the wire types to text: runs,
timelines, approvals, tables (`_text`, with `terminal_safe`), and tools (`_tools`).

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
