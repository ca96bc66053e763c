"""Conversation snapshots: the answer to history growth.

Sending the whole conversation to every model activity makes a run's history grow with
the square of its length and breaks Temporal's 2 MB payload limit after a few large
turns. Instead the model activity keeps the conversation in the artifact store as a
chain of deltas (each node: the previous node's reference plus the messages added
since), and the workflow sends only the reference and the new messages. History then
grows with what is new each turn, not with everything said so far.

Continue-as-new carries the conversation the snapshot holds by reference only, so a
continued run holds just the messages after it; `whole_conversation` joins the two for a
client (`AgentRun.conversation()`), which must reach the store too.

Workers on several machines must share the artifact store (DURABLE_TOOLS_ARTIFACTS on
shared storage, or another store); when a snapshot is missing anyway, the model activity
says so and the workflow of a first run resends the conversation in full (a continued run
no longer holds it all, and fails with that reason). When a snapshot cannot be
written (a full or read-only store), the model activity fails for good with a message
that says so: retrying would call the model again and again for an answer that cannot
be kept, so the run ends with that reason instead.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict

from temporalio.exceptions import ApplicationError

from durable_tools.messages import Message, ToolDefinition
from durable_tools.tools._artifacts import ArtifactStore, store_for_ref
from durable_tools.tools._results import ArtifactRef

__all__ = [
    "CONVERSATION_MEDIA_TYPE",
    "SNAPSHOT_UNAVAILABLE",
    "ConversationSnapshots",
    "SnapshotMissing",
    "snapshot_unavailable",
    "whole_conversation",
]

CONVERSATION_MEDIA_TYPE = "application/vnd.durable-tools.conversation-delta+json"
TOOLS_MEDIA_TYPE = "application/vnd.durable-tools.tool-definitions+json"
SNAPSHOT_UNAVAILABLE = "SnapshotUnavailable"
"""The application error type of a model activity whose snapshot could not be saved."""


class SnapshotMissing(LookupError):
    """The store does not hold a snapshot the workflow referred to (or it is corrupt)."""


def snapshot_unavailable(error: BaseException, store: ArtifactStore) -> ApplicationError:
    """The non-retryable error of a model call whose conversation could not be saved.

    Args:
        error: What the store raised (often `OSError`: no space left, read-only).
        store: The store, named in the message so an operator knows where to look.
    """
    where = getattr(store, "root", None)
    named = f" at {where}" if where is not None else ""
    return ApplicationError(
        f"the conversation snapshot could not be saved to the artifact store{named} "
        f"({type(error).__name__}: {error}); the model's answer cannot be kept, so the run "
        "stops here instead of calling the model again. Free space or fix the store, then "
        "start the run again.",
        type=SNAPSHOT_UNAVAILABLE,
        non_retryable=True,
    )


class ConversationSnapshots:
    """Saves and loads conversations as delta chains, with an in-process cache.

    Args:
        store: Where the chain nodes live (content-addressed, so retries are harmless).
        cache_size: Conversations kept decoded in memory, most recent first; a worker
            usually serves the next turn of a run it just served.
    """

    def __init__(self, store: ArtifactStore, cache_size: int = 64) -> None:
        self.store = store
        self.cache_size = cache_size
        self._cache: OrderedDict[str, list[Message]] = OrderedDict()
        self._tools: OrderedDict[str, list[ToolDefinition]] = OrderedDict()
        self._lock = threading.Lock()

    def save_tools(self, tools: list[ToolDefinition]) -> ArtifactRef:
        """Store a run's tool definitions once; later model calls send only the reference."""
        data = json.dumps([t.model_dump(mode="json") for t in tools], separators=(",", ":"))
        ref = self.store.put(data.encode(), TOOLS_MEDIA_TYPE)
        self._remember_tools(ref, tools)
        return ref

    def cached(self, ref: ArtifactRef, expected_length: int) -> list[Message] | None:
        """The whole conversation up to `ref` if this process holds it, else None (no I/O).

        A worker usually serves the next turn of a run it just served: then the model
        activity needs no thread hop to the store.
        """
        with self._lock:
            messages = self._cache.get(ref.sha256)
            if messages is None or len(messages) != expected_length:
                return None
            self._cache.move_to_end(ref.sha256)
        return list(messages)

    def cached_tools(self, ref: ArtifactRef) -> list[ToolDefinition] | None:
        """The tool definitions behind `ref` if this process holds them, else None (no I/O)."""
        with self._lock:
            return self._tools.get(ref.sha256)

    def load_tools(self, ref: ArtifactRef) -> list[ToolDefinition]:
        """The tool definitions behind a reference.

        Raises:
            SnapshotMissing: the store does not hold them.
        """
        cached = self.cached_tools(ref)
        if cached is not None:
            return cached
        try:
            tools = [ToolDefinition.model_validate(t) for t in json.loads(self.store.get(ref))]
        except KeyError as error:
            raise SnapshotMissing(str(error)) from None
        except (ValueError, TypeError) as error:
            raise SnapshotMissing(f"tool definitions {ref.uri} are corrupt: {error}") from None
        self._remember_tools(ref, tools)
        return tools

    def _remember_tools(self, ref: ArtifactRef, tools: list[ToolDefinition]) -> None:
        with self._lock:
            self._tools[ref.sha256] = tools
            while len(self._tools) > self.cache_size:
                self._tools.popitem(last=False)

    def save(
        self, base: ArtifactRef | None, base_messages: list[Message], added: list[Message]
    ) -> ArtifactRef:
        """Store `added` after the snapshot `base` (which holds `base_messages`)."""
        node = {
            "prev": base.model_dump(mode="json") if base else None,
            "length": len(base_messages) + len(added),
            "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in added],
        }
        ref = self.store.put(
            json.dumps(node, separators=(",", ":")).encode(), CONVERSATION_MEDIA_TYPE
        )
        self._remember(ref, [*base_messages, *added])
        return ref

    def load(self, ref: ArtifactRef, expected_length: int) -> list[Message]:
        """The whole conversation up to `ref`.

        Raises:
            SnapshotMissing: a node of the chain is not in the store, or the chain does not
                hold `expected_length` messages.
        """
        messages = self._load(ref)
        if len(messages) != expected_length:
            raise SnapshotMissing(
                f"conversation snapshot {ref.uri} holds {len(messages)} messages, "
                f"the run expected {expected_length}"
            )
        return list(messages)

    def _load(self, ref: ArtifactRef) -> list[Message]:
        chain: list[list[Message]] = []
        current: ArtifactRef | None = ref
        while current is not None:
            node_ref = current
            with self._lock:
                cached = self._cache.get(current.sha256)
                if cached is not None:
                    self._cache.move_to_end(current.sha256)
            if cached is not None:
                chain.append(cached)
                break
            try:
                node = json.loads(self.store.get(current))
                chain.append([Message.model_validate(m) for m in node["messages"]])
                current = ArtifactRef.model_validate(node["prev"]) if node["prev"] else None
            except KeyError as error:
                raise SnapshotMissing(str(error)) from None
            except (ValueError, TypeError) as error:
                raise SnapshotMissing(
                    f"conversation snapshot {node_ref.uri} is corrupt: {error}"
                ) from None
        messages = [m for part in reversed(chain) for m in part]
        self._remember(ref, messages)
        return messages

    def _remember(self, ref: ArtifactRef, messages: list[Message]) -> None:
        with self._lock:
            self._cache[ref.sha256] = messages
            self._cache.move_to_end(ref.sha256)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


async def whole_conversation(
    snapshot: ArtifactRef | None,
    snapshot_length: int,
    offset: int,
    messages: list[Message],
    store: ArtifactStore | None = None,
) -> list[Message]:
    """A continued run's whole conversation: the snapshot's first `offset` messages, then
    the `messages` the run holds (see the `conversation_view` query).

    Args:
        snapshot: The run's latest snapshot, which holds the messages before `offset`.
        snapshot_length: How many messages it holds.
        offset: The index of `messages[0]` in the whole conversation.
        messages: What the run holds.
        store: Where to read; default the store the snapshot points into.

    Raises:
        SnapshotMissing: the store does not hold the snapshot (a store this process cannot
            reach, or one that was emptied); the message names it.
    """
    if offset <= 0:
        return list(messages)
    if snapshot is None or snapshot_length < offset:
        raise SnapshotMissing(
            f"the run holds its conversation from message {offset} on, and no snapshot "
            "holds the earlier ones"
        )
    own = store is None
    source = store_for_ref(snapshot) if store is None else store
    try:
        earlier = await asyncio.to_thread(
            ConversationSnapshots(source, cache_size=1).load, snapshot, snapshot_length
        )
    finally:
        close = getattr(source, "close", None)
        if own and close is not None:  # a client made for this read
            await asyncio.to_thread(close)
    return [*earlier[:offset], *messages]
