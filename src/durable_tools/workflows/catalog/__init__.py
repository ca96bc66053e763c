"""The run's tool catalog: loaded once into history, viewed per turn, and searched by the
built-in `search_tools` tool.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
