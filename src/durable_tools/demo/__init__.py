"""The demo: sample tools, a scripted model and the flow `durable-tools demo` runs.

`durable_tools.demo.tools:registry` is an ordinary tool module: point a worker at it with
`durable-tools worker --tools durable_tools.demo.tools`.
"""

from ._runner import DEMO_TASK_QUEUE, demo_config, run_demo, script_path

__all__ = ["DEMO_TASK_QUEUE", "demo_config", "run_demo", "script_path"]
