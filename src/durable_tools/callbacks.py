"""Callback tools, the client side: answer a run's published calls from this machine.

Declare a callback tool on the worker with `ToolRegistry.callback_tool`; then, where the
tool can run (a user's laptop, a browser backend, a device), either serve every call
until the run ends (`AgentRun.serve_callbacks` or `serve_callbacks`), or read and answer
calls one by one (`pending_callbacks`, `answer_callback`). See docs/sources/callbacks.md.
"""

from durable_tools.client.callbacks._serve import (
    RUN_ENDED,
    CallbackHandler,
    CallbackRejected,
    OnAnswer,
    answer_callback,
    handlers_from_module,
    pending_callbacks,
    serve_callbacks,
)
from durable_tools.protocol._callback_types import (
    CALLBACK_ALREADY_ANSWERED,
    CALLBACK_INVALID,
    CALLBACK_OUTPUT_INVALID,
    CALLBACK_UNKNOWN,
    CallbackResult,
    PendingCallback,
)

__all__ = [
    "CALLBACK_ALREADY_ANSWERED",
    "CALLBACK_INVALID",
    "CALLBACK_OUTPUT_INVALID",
    "CALLBACK_UNKNOWN",
    "RUN_ENDED",
    "CallbackHandler",
    "CallbackRejected",
    "CallbackResult",
    "OnAnswer",
    "PendingCallback",
    "answer_callback",
    "handlers_from_module",
    "pending_callbacks",
    "serve_callbacks",
]
