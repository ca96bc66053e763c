"""`DurableToolsPlugin`: durable-tools in an application's own Temporal client and workers.

Add it to the client; every worker built from that client then runs the agent workflow
and the tools, beside the application's own workflows and other plugins::

    registry = ToolRegistry()  # your tools
    client = await Client.connect("localhost:7233", plugins=[DurableToolsPlugin(registry)])
    worker = Worker(client, task_queue="agents", workflows=[MyWorkflow], activities=[mine])
    await worker.run()

Start runs with `DurableTools(client, task_queue="agents")`. Tools with `max_concurrent`
or `rate_limit` need the extra workers of `plugin.limited_workers(client, "agents")`;
`durable_tools.build_worker` is this plugin plus those workers. `DurableToolsPlugin` is
exported by the top-level `durable_tools`; this module lists what it is built on.
"""

from durable_tools._data_converter import durable_data_converter
from durable_tools.worker._plugin import PLUGIN_NAME, DurableToolsPlugin as DurableToolsPlugin

__all__ = ["PLUGIN_NAME", "durable_data_converter"]
