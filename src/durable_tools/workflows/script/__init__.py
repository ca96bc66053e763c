"""Code mode: the `run_script` tool, whose script's host calls are ordinary tool calls.

Sits on top of `calls` (each host call takes the whole call route) and under `loop`
(which routes `run_script` calls here). `_stubs` turns the tools' schemas into the
stubs the script is checked against; `_run` steps the script and routes its host calls.
See docs/code-mode.md.

Internal: its modules are private; `CodeMode` is public from `durable_tools.workflows`.
"""

__all__: list[str] = []
