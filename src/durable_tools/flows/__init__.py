"""Flows: a graph of tool calls registered as one tool (`ToolRegistry.flow`).

The model calls a flow like any tool and gets one result. The flow runs as a child
workflow of the agent run (`FlowWorkflow`); each node is a call of a registered tool, run
as that tool's own activity with its own policy, and nodes that do not depend on each
other run at the same time.

A flow is planned and checked when it is registered, so its model and planner live with
the registry (`durable_tools.tools._flow_*`: `tools` never imports `flows`); this package
is their public path, and the flow's runtime.
"""

from durable_tools.tools._flow_model import (
    FLOW_WORKFLOW,
    FlowInput,
    FlowNode,
    FlowPlan,
    FlowResult,
    NodeReport,
    PlannedNode,
)
from durable_tools.tools._flow_plan import FlowBlueprint, plan_flow
from durable_tools.workflows.flow._workflow import FlowWorkflow

__all__ = [
    "FLOW_WORKFLOW",
    "FlowBlueprint",
    "FlowInput",
    "FlowNode",
    "FlowPlan",
    "FlowResult",
    "FlowWorkflow",
    "NodeReport",
    "PlannedNode",
    "plan_flow",
]
