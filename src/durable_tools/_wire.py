"""The base of the project's wire types: JSON leaves out fields still at their defaults.

Every activity input and result, and every run's start input, is recorded in history as
the JSON temporalio's pydantic converter writes (`pydantic_core.to_json`), which spells
out every field: `"grant_ref":null`, `"identity":{...}`, a whole default `AgentConfig`.
A `WireModel` writes only the fields that differ from their defaults, so a record costs
what it says. Reading is unchanged: a missing field takes its default, so the short form
and the full form (recorded histories, payloads of older workers in a rolling deploy)
both decode to equal objects.

Only JSON is trimmed (`when_used="json"`): `model_dump()` in Python mode, which code uses
to merge and copy models, still returns every field.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

__all__ = ["WireModel"]


class WireModel(BaseModel):
    """A pydantic model whose JSON omits the fields equal to their defaults."""

    @model_serializer(mode="wrap", when_used="json")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name, default in _defaults(type(self)):
            if name in data:
                value = getattr(self, name)
                # The type check keeps `True` apart from a default `1`, `0` from `0.0`.
                if type(value) is type(default) and value == default:
                    del data[name]
        return data


@functools.cache
def _defaults(model: type[BaseModel]) -> tuple[tuple[str, Any], ...]:
    """The fields of `model` that have a default, with it (factories called once, here).

    The cached values are compared with, never handed out, so mutable ones stay intact.
    """
    return tuple(
        (name, field.get_default(call_default_factory=True, validated_data={}))
        for name, field in model.model_fields.items()
        if not field.is_required()
    )
