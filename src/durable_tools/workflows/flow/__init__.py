"""The flow workflow (`FlowWorkflow`): a graph of tool calls run as a child workflow, each node
a call of a registered tool in its own activity. Its public names are in
`durable_tools.flows`.

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
