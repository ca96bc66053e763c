"""Flows: a graph of tool calls registered as one tool (`ToolRegistry.flow`).

The model calls a flow like any tool and gets one result. The flow runs as a child
workflow of the agent run (`FlowWorkflow`); each node is a call of a registered tool, run
as that tool's own activity with its own policy, and nodes that do not depend on each
other run at the same time.
"""

from ._model import (
    FLOW_WORKFLOW,
    FlowInput,
    FlowNode,
    FlowPlan,
    FlowResult,
    NodeReport,
    PlannedNode,
)
from ._validate import FlowBlueprint, plan_flow
from ._workflow import FlowWorkflow

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
