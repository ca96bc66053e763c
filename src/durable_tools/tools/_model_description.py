"""The description of a tool the model reads: the tool's own, its safety notes, its examples.

Pure and deterministic: the agent loop builds each model turn's tool definitions from it in
workflow code, and other frameworks' bridges can give their models the same text.
"""

from __future__ import annotations

import json

from ._spec import ToolSpec

__all__ = ["MAX_SAFETY_NOTES_CHARS", "model_description"]

MAX_SAFETY_NOTES_CHARS = 2_000
"""Safety notes longer than this reach the model cut (with an ellipsis). Specs are not
refused for it: a run's recorded catalog must read back as it was recorded."""


def model_description(spec: ToolSpec, *, safety_notes: bool = True) -> str:
    """The tool's description, then `Safety notes:` (when it has some and `safety_notes`),
    then its examples as JSON lines.

    No adapter has a field for examples or safety notes (Anthropic's `input_examples` is
    not wired), so they travel in the description, where every provider shows them to the
    model. Safety notes come before the examples: they say how to use the tool, and a
    model reads a description's first paragraphs most.

    Args:
        spec: The tool.
        safety_notes: Whether to add the tool's `safety_notes` (False reproduces the
            description runs saw before notes reached the model).
    """
    parts = [spec.description.rstrip()]
    notes = (spec.safety_notes or "").strip() if safety_notes else ""
    if len(notes) > MAX_SAFETY_NOTES_CHARS:
        notes = notes[: MAX_SAFETY_NOTES_CHARS - 1] + "…"
    if notes:
        parts.append("Safety notes: " + notes)
    if spec.examples:
        lines = [json.dumps(e, ensure_ascii=False, sort_keys=True) for e in spec.examples]
        parts.append("Examples:\n" + "\n".join(lines))
    return "\n\n".join(part for part in parts if part)
