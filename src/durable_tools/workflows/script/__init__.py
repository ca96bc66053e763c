"""Code mode: the `run_script` tool, whose script's host calls are ordinary tool calls.

Sits on top of `calls` (each host call takes the whole call route) and under `loop`
(which routes `run_script` calls here). See docs/code-mode.md.

Internal: its modules are private; `CodeMode` is public from `durable_tools.workflows`.
"""

from durable_tools.workflows.script._run import run_script, script_routes
from durable_tools.workflows.script._stubs import host_specs, host_stubs, script_definition

__all__ = ["host_specs", "host_stubs", "run_script", "script_definition", "script_routes"]
