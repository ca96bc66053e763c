"""durable-tools: run LLM-agent tools durably on Temporal.

The top-level package is the plain-Python tool layer (define tools, their specs, errors
and results) and the conversation types; it imports nothing from Temporal. The durable
parts live in their own modules:

- `durable_tools.workflows`: the agent workflow and its configuration (`AgentConfig`, ...).
- `durable_tools.worker`: `build_worker(client, registry)`.
- `durable_tools.client`: `DurableTools` to start runs, approve, steer and cancel them.
- `durable_tools.connection.connect`: a client with the right data converter.
- `durable_tools.plugin.DurableToolsPlugin` (also `durable_tools.DurableToolsPlugin`,
  imported on first use so that `import durable_tools` stays Temporal-free): everything
  above as a plugin for an application's own Temporal client and workers.
"""

from typing import TYPE_CHECKING, Any

from durable_tools.messages import Message, ModelRequest, ModelResponse, ToolCall
from durable_tools.tools import (
    ArtifactRef,
    Cancelled,
    ContentBlock,
    Denied,
    ExecutionPolicy,
    Identity,
    Injected,
    InvalidArguments,
    LoadingMode,
    NeedsAuthorization,
    OAuthRequirement,
    RetrySpec,
    Safety,
    Skip,
    ToolContext,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
    ToolRegistrationError,
    ToolRegistry,
    ToolResult,
    ToolSpec,
    ToolTimeout,
)

if TYPE_CHECKING:
    from durable_tools.plugin import DurableToolsPlugin

__version__ = "0.1.0"

__all__ = [
    "ArtifactRef",
    "Cancelled",
    "ContentBlock",
    "Denied",
    "DurableToolsPlugin",
    "ExecutionPolicy",
    "Identity",
    "Injected",
    "InvalidArguments",
    "LoadingMode",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "NeedsAuthorization",
    "OAuthRequirement",
    "RetrySpec",
    "Safety",
    "Skip",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFound",
    "ToolRegistrationError",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "ToolTimeout",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # PEP 562: the plugin needs temporalio, which the tool layer must not import.
    if name == "DurableToolsPlugin":
        from durable_tools.plugin import DurableToolsPlugin

        return DurableToolsPlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
