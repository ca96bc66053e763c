"""durable-tools' tool runtime under other agent frameworks.

Each module is one framework, imported on its own (`durable_tools.integrations.pydantic_ai`);
a framework that is not installed gives a one-line install hint. Every module builds on the
public `durable_tools.workflows.ToolRuntime`: the framework keeps its model and its loop,
and each tool call takes durable-tools' pipeline (validation, approvals, OAuth, the tool's
activity, events and search attributes).
"""

__all__: list[str] = []
