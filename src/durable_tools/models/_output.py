"""An `OutputSchema` in each provider's native structured-output request field.

The workflow sets `ModelRequest.output` only when the schema should go natively (see
`workflows/loop/_final_output.py`); otherwise the schema travels as a `final_answer` tool and
the adapters have nothing to do.
"""

from __future__ import annotations

from typing import Any

from ..messages import OutputSchema

__all__ = ["anthropic_output_format", "chat_response_format", "responses_text_format"]


def chat_response_format(output: OutputSchema) -> dict[str, Any]:
    """Chat Completions' `response_format`."""
    json_schema: dict[str, Any] = {
        "name": output.name,
        "schema": output.json_schema,
        "strict": output.strict,
    }
    if output.description:
        json_schema["description"] = output.description
    return {"type": "json_schema", "json_schema": json_schema}


def responses_text_format(output: OutputSchema) -> dict[str, Any]:
    """The Responses API's `text.format`."""
    out: dict[str, Any] = {
        "type": "json_schema",
        "name": output.name,
        "schema": output.json_schema,
        "strict": output.strict,
    }
    if output.description:
        out["description"] = output.description
    return out


def anthropic_output_format(output: OutputSchema) -> dict[str, Any]:
    """The Messages API's `output_config.format` (used with `mode="native"` only: in
    `auto` mode Anthropic models get a `final_answer` tool)."""
    return {"type": "json_schema", "schema": output.json_schema}
