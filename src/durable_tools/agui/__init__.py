"""An AG-UI endpoint: a product's chat front end talks to durable-tools sessions.

`create_agui_app(tools, AguiConfig(agent=..., auth=...))` is a Starlette app taking the
AG-UI protocol's `RunAgentInput` (`POST`, JSON) and answering with its events as
server-sent events: each thread is a durable session of the authenticated user's, each
AG-UI run one message's turns (text as it streams, tool calls with their results, steps
per model turn, what the run waits for), and an approval the user may decide ends the
AG-UI run with an `interrupt` that the next input's `resume` decides. See docs/agui.md.

Users are the inbox's (`durable_tools.inbox.AuthConfig`, `TokenStore`, `User`). Needs the
`agui` extra (`ag-ui-protocol` and the inbox's packages).
"""

from durable_tools._extras import MissingExtraError, install_hint

try:
    import ag_ui.core  # noqa: F401
    import jinja2  # noqa: F401  (the inbox's users: durable_tools.inbox)
    import starlette  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError(
        f"the AG-UI endpoint needs the agui extra: {install_hint('agui')} ({error})"
    ) from error

from ._app import DEFAULT_AGUI_BODY_BYTES, AguiConfig, Authenticate, create_agui_app
from ._input import InputLimits, interrupt_id, session_id

__all__ = [
    "DEFAULT_AGUI_BODY_BYTES",
    "AguiConfig",
    "Authenticate",
    "InputLimits",
    "create_agui_app",
    "interrupt_id",
    "session_id",
]
