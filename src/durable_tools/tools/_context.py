"""What a running tool can see: `ToolContext`, and `Injected` for worker-side values.

Both are hidden from the model: a parameter typed `ToolContext` or annotated
`Annotated[T, Injected("name")]` never appears in the tool's schema, and a model
that supplies one anyway is rejected, never obeyed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Identity", "Injected", "MissingResource", "ToolContext"]


class Identity(BaseModel):
    """Who a run acts for. Recorded in history: identifiers only, never credentials."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str | None = None
    user: str | None = None
    session: str | None = None


class MissingResource(LookupError):
    """A tool asked for a worker-side resource or secret that the worker does not have."""


@dataclass(frozen=True)
class Injected:
    """Marks a parameter whose value comes from the worker, never from the model.

    Use as `Annotated[httpx.AsyncClient, Injected("http")]`. Without a name, the
    parameter's own name is looked up in the worker's resources.

    Args:
        name: The resource (or secret, with `secret=True`) to look up on the worker.
        secret: Look the name up among the worker's secrets instead of its resources.
    """

    name: str | None = None
    secret: bool = False


def _no_progress(_: Any) -> None:
    return None


@dataclass
class ToolContext:
    """Everything a tool call knows about itself, built on the worker for each attempt.

    Tools receive it by declaring a parameter of this type (any name).
    """

    tool_call_id: str
    """The model's id for this call; stable for the life of the call."""
    tool_name: str
    """The tool being called."""
    run_id: str = ""
    """The agent run (Temporal workflow id) this call belongs to."""
    idempotency_key: str = ""
    """`<workflow id>/<tool call id>`: the same on every attempt, after a crash or a restart."""
    attempt: int = 1
    """1 for the first attempt, then 2, 3, ..."""
    identity: Identity = field(default_factory=Identity)
    """Tenant, user and session the run acts for."""
    heartbeat_details: Any = None
    """What the previous attempt last reported through `progress`, so a long tool can resume."""
    resources: Mapping[str, Any] = field(default_factory=dict)
    """Worker-side objects (clients, stores) by name."""
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Worker-side secrets by name. Never logged, never in history."""
    access_token: str | None = field(default=None, repr=False)
    """The OAuth access token for the tool's provider, when the tool declares one."""
    _progress: Callable[[Any], None] = field(default=_no_progress, repr=False)
    _is_cancelled: Callable[[], bool] | None = field(default=None, repr=False)

    def progress(self, details: Any = None) -> None:
        """Heartbeat, recording `details` so a retry can resume from them."""
        self._progress(details)

    heartbeat = progress

    @property
    def cancelled(self) -> bool:
        """Whether the run asked this call to stop. Long tools should check it between steps."""
        return self._is_cancelled is not None and self._is_cancelled()

    async def wait_cancelled(self) -> None:
        """Wait until the call is cancelled (for tools that race work against cancellation)."""
        while not self.cancelled:
            await asyncio.sleep(0.1)

    def resource(self, name: str) -> Any:
        """A worker-side resource by name.

        Raises:
            MissingResource: the worker has no resource of that name.
        """
        try:
            return self.resources[name]
        except KeyError:
            raise MissingResource(f"worker has no resource named {name!r}") from None

    def secret(self, name: str) -> str:
        """A worker-side secret by name.

        Raises:
            MissingResource: the worker has no secret of that name.
        """
        try:
            return self.secrets[name]
        except KeyError:
            raise MissingResource(f"worker has no secret named {name!r}") from None
