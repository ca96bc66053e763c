"""Accumulating a streamed Chat Completions answer into the body `complete` would get.

The chunks of `stream=true` (with `stream_options.include_usage`) carry the message in
pieces: content deltas, tool calls split across chunks by `index` (id and name first,
then argument fragments), the finish reason, and usage in a last chunk without
choices. `ChunkAccumulator` rebuilds the non-streamed completion body from them, so
the streamed answer is parsed by exactly the code that parses a whole one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChunkAccumulator"]


class ChunkAccumulator:
    """Feeds on chunk bodies (dicts); `completion()` is the equivalent whole body."""

    def __init__(self) -> None:
        self._content: list[str] | None = None
        self._refusal: list[str] | None = None
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish_reason: Any = None
        self._usage: Any = None

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its text delta ("" when it has none)."""
        if not isinstance(chunk, dict):
            return ""
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return ""
        text = ""
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # only the first choice is read, as for a whole completion
            if choice.get("finish_reason") is not None:
                self._finish_reason = choice["finish_reason"]
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            content = delta.get("content")
            if isinstance(content, str):
                self._content = [*(self._content or []), content]
                text += content
            refusal = delta.get("refusal")
            if isinstance(refusal, str):
                self._refusal = [*(self._refusal or []), refusal]
            for call in delta.get("tool_calls") or []:
                if isinstance(call, dict):
                    self._add_call(call)
        return text

    def _add_call(self, call: dict[str, Any]) -> None:
        index = call.get("index")
        key = index if isinstance(index, int) else len(self._calls)
        entry = self._calls.setdefault(
            key, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if isinstance(call.get("id"), str) and call["id"]:
            entry["id"] = call["id"]
        function = call.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str):
                entry["function"]["name"] += function["name"]
            if isinstance(function.get("arguments"), str):
                entry["function"]["arguments"] += function["arguments"]

    def completion(self) -> dict[str, Any]:
        """The completion body the same answer would have had without streaming."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if self._content is None else "".join(self._content),
        }
        if self._refusal is not None:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [self._calls[key] for key in sorted(self._calls)]
        body: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason}]
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return body
