"""durable-tools: run LLM-agent tools durably on Temporal.

Every public name has one home, the module that documents it; the top-level package only
carries the version and imports nothing (so `import durable_tools` stays Temporal-free):

- `durable_tools.tools`: define tools (`ToolRegistry`, `ToolContext`, `Injected`, ...),
  their specs, errors and results; plain Python, no Temporal.
- `durable_tools.messages`: the conversation types (`Message`, `ModelRequest`, ...).
- `durable_tools.workflows`: the agent workflow and its configuration (`AgentConfig`, ...).
- `durable_tools.worker`: `build_worker(client, registry)`.
- `durable_tools.client`: `DurableTools` to start runs, approve, steer, answer and cancel
  them.
- `durable_tools.connection.connect`: a client with the right data converter.
- `durable_tools.plugin.DurableToolsPlugin`: everything above as a plugin for an
  application's own Temporal client and workers.

The names this package used to re-export (`durable_tools.ToolRegistry`, ...) still
resolve, with a `DeprecationWarning` naming their home.
"""

import importlib
import warnings
from types import MappingProxyType
from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__"]

_TOOLS = "durable_tools.tools"
_MOVED = MappingProxyType(
    {
        **dict.fromkeys(
            (
                "ArtifactRef",
                "Cancelled",
                "ContentBlock",
                "Denied",
                "ExecutionPolicy",
                "Identity",
                "Injected",
                "InvalidArguments",
                "LoadingMode",
                "NeedsAuthorization",
                "OAuthRequirement",
                "RetrySpec",
                "Safety",
                "Skip",
                "ToolContext",
                "ToolError",
                "ToolExecutionError",
                "ToolNotFound",
                "ToolRegistrationError",
                "ToolRegistry",
                "ToolResult",
                "ToolSpec",
                "ToolTimeout",
            ),
            _TOOLS,
        ),
        **dict.fromkeys(
            ("Message", "ModelRequest", "ModelResponse", "ToolCall"), "durable_tools.messages"
        ),
        "DurableToolsPlugin": "durable_tools.plugin",
    }
)
"""Names the top level re-exported before each name got one public path: name -> home."""


def __getattr__(name: str) -> Any:
    # PEP 562: old imports (`from durable_tools import ToolRegistry`) keep working, lazily
    # (the plugin needs temporalio, which `import durable_tools` must not load).
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"durable_tools.{name} is deprecated: import it from {home}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)
