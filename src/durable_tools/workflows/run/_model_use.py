"""What a run's model calls used and were sent: the tokens of the chain (and of its
fallback models), the context once compacted and its size, the tool definitions built
for the advertised set.

Data only, so that `_state` can hold it and the observers below `loop/` can show the
usage; only `workflows/loop/` changes it (`bench.state_use` counts assignments made
anywhere else). Usage, context and compactions are carried over continue-as-new (as the
`CarriedState` fields of those names, see `_carry`); the rest lives in one history.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from durable_tools.messages import ToolDefinition, Usage
from durable_tools.protocol._compaction import ContextView
from durable_tools.tools._results import ArtifactRef

__all__ = ["ModelUse"]


@dataclass
class ModelUse:
    """The model side of one run."""

    usage: Usage = field(default_factory=Usage)
    """Tokens of every model call of the chain so far (see `_usage`)."""
    fallback_usage: dict[str, Usage] = field(default_factory=dict)
    """Of `usage`, the tokens of turns answered by a fallback model, by model spec."""
    context: ContextView | None = None
    """What the model is sent once its context was compacted (see `_compaction`)."""
    context_tokens: int = 0
    """The model's context after the last model call, in tokens: reported, else estimated."""
    compactions: int = 0
    """Compactions of the chain so far (numbers the summariser's calls)."""

    # Not carried: rebuilt.
    answered_by: str = ""
    """The model spec that answered the latest model call (a fallback model, or `model`)."""
    definitions: tuple[tuple[str, ...], list[ToolDefinition]] | None = None
    """Tool definitions for the advertised set they were built for."""
    tools_ref: tuple[int, ArtifactRef] | None = None
    """Where the model activity stored the definitions it was sent, with the catalog's
    `advertised_changes` they were built at: later calls send the reference instead of
    the definitions while the advertised set is unchanged."""
    compaction_blocked_at: int = -1
    """The conversation's length when a compaction found nothing to summarise: not tried
    again until it grows (not carried: a continued run tries once more)."""
