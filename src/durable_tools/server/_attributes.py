"""The project's search attributes on a namespace: registered at runtime, or named on the
dev server's command line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributeIndexedValueType, SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.search_attributes import SEARCH_ATTRIBUTES
from durable_tools.server._locate import DevServerError

__all__ = ["CLI_TYPE_NAMES", "ensure_search_attributes"]

# The CLI's names for the search attribute types (`--search-attribute NAME=TYPE`).
CLI_TYPE_NAMES = {
    SearchAttributeIndexedValueType.TEXT: "Text",
    SearchAttributeIndexedValueType.KEYWORD: "Keyword",
    SearchAttributeIndexedValueType.INT: "Int",
    SearchAttributeIndexedValueType.DOUBLE: "Double",
    SearchAttributeIndexedValueType.BOOL: "Bool",
    SearchAttributeIndexedValueType.DATETIME: "Datetime",
    SearchAttributeIndexedValueType.KEYWORD_LIST: "KeywordList",
}


async def ensure_search_attributes(
    client: Client,
    attributes: Sequence[SearchAttributeKey[Any]] = SEARCH_ATTRIBUTES,
    *,
    namespace: str | None = None,
) -> None:
    """Register the project's search attributes on the client's namespace, if missing.

    Raises:
        DevServerError: An attribute exists with another type.
    """
    ns = namespace or client.namespace
    existing = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=ns)
    )
    known = {**existing.system_attributes, **existing.custom_attributes}
    missing: dict[str, IndexedValueType.ValueType] = {}
    for key in attributes:
        wanted = IndexedValueType.ValueType(int(key.indexed_value_type))
        have = known.get(key.name)
        if have is None:
            missing[key.name] = wanted
        elif have != wanted:
            raise DevServerError(
                f"search attribute {key.name} exists in namespace {ns!r} as "
                f"{IndexedValueType.Name(have)}, not {IndexedValueType.Name(wanted)}"
            )
    if not missing:
        return
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(search_attributes=missing, namespace=ns)
        )
    except RPCError as err:
        # Another process may have registered them between our list and add.
        if err.status != RPCStatusCode.ALREADY_EXISTS and "already" not in err.message.lower():
            raise
