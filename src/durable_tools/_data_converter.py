"""The data converter every client, worker and replayer of durable-tools must share."""

from __future__ import annotations

import dataclasses

from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter, DefaultPayloadConverter, PayloadCodec

__all__ = ["durable_data_converter", "with_durable_conversion"]


def durable_data_converter(payload_codec: PayloadCodec | None = None) -> DataConverter:
    """The pydantic data converter, with `payload_codec` (e.g. encryption) if given."""
    if payload_codec is None:
        return pydantic_data_converter
    return dataclasses.replace(pydantic_data_converter, payload_codec=payload_codec)


def with_durable_conversion(
    existing: DataConverter | None, payload_codec: PayloadCodec | None = None
) -> DataConverter:
    """`existing` with pydantic payload conversion and `payload_codec` composed in.

    What `existing` sets besides (a failure converter, its own codec) is kept, so the
    plugin can join an application's client without undoing its choices.

    Raises:
        ValueError: `existing` has a custom payload converter (the agent's pydantic types
            would not survive it), or a different codec than `payload_codec`.
    """
    if existing is None:
        return durable_data_converter(payload_codec)
    converter_class = existing.payload_converter_class
    if not issubclass(converter_class, PydanticPayloadConverter):
        if converter_class is not DefaultPayloadConverter:
            raise ValueError(
                f"the client's payload converter {converter_class.__name__} is not pydantic's: "
                "durable-tools needs temporalio.contrib.pydantic.PydanticPayloadConverter "
                "(or a subclass) to carry its run types"
            )
        converter_class = PydanticPayloadConverter
    codec = existing.payload_codec
    if payload_codec is not None:
        if codec is not None and codec is not payload_codec:
            raise ValueError(
                "the client already has a payload codec: pass one codec, either to the "
                "client or to DurableToolsPlugin, not both"
            )
        codec = payload_codec
    return dataclasses.replace(
        existing, payload_converter_class=converter_class, payload_codec=codec
    )
