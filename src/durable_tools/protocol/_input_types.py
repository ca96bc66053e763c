"""Wire types of MCP elicitation: a server's questions for the user, and the answer.

A tool activity whose MCP server needs input completes with an error outcome whose
`structured` value holds `{INPUT_REQUIRED_KEY: InputRequired}`: the questions and the
server's opaque `request_state`. The run shows them as a `PendingInput` (the `status`
query), waits for the `answer_input` update (an `InputAnswer`), then runs the activity
again with the responses. These types cross the sandbox as data.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "INPUT_ACTIONS",
    "INPUT_REQUIRED_KEY",
    "InputAnswer",
    "InputQuestion",
    "InputRequired",
    "InputResume",
    "PendingInput",
]

INPUT_REQUIRED_KEY = "durable_tools.input_required"
"""Key of an outcome's structured value that marks it "needs input" (see module doc)."""

INPUT_ACTIONS = ("accept", "decline", "cancel")
"""What a user may answer: accept (with content), decline, or cancel (dismiss)."""

InputAction = Literal["accept", "decline", "cancel"]


class InputQuestion(BaseModel):
    """One question of a server: a message and the JSON Schema of the expected answer."""

    model_config = ConfigDict(frozen=True)

    key: str
    """The server's identifier of the request; the answer is sent back under it."""
    message: str
    requested_schema: dict[str, Any] = Field(default_factory=dict)
    """A flat JSON Schema object (top-level properties only, as MCP restricts it)."""


class InputRequired(BaseModel):
    """What the tool activity reports when the server needs the user's input."""

    questions: list[InputQuestion]
    request_state: str | None = None
    """The server's opaque state, echoed back on the next call; never shown to people."""


class PendingInput(BaseModel):
    """A tool call waiting for the user to answer its server's questions."""

    call_id: str
    tool: str
    questions: list[InputQuestion]
    requested_at: datetime
    deadline: datetime | None = None
    """When the call gives up waiting (the tool's timeout); None waits as long as the run."""
    round: int = 1
    """Which question round of the call this is (a server may ask again)."""


class InputAnswer(BaseModel):
    """The user's answer to a pending input request (the `answer_input` update)."""

    call_id: str
    action: InputAction
    content: dict[str, Any] | None = None
    """The answer to the question (several questions: an object keyed by question key)."""


class InputResume(BaseModel):
    """What the next activity of the call sends back to the server."""

    responses: dict[str, dict[str, Any]]
    """Per question key, the MCP `ElicitResult` wire form (`action`, `content`)."""
    request_state: str | None = None
