"""Retry allow-lists, output validation modes, catalog metadata and full-identity catalogs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from durable_tools import (
    Identity,
    RetrySpec,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
    ToolSpec,
)
from durable_tools.tools import filter_specs
from durable_tools.tools._catalog import IdentityIncomplete
from durable_tools.tools._classify import apply_retry_spec, classify_exception
from durable_tools.tools._model_description import (
    MAX_SAFETY_NOTES_CHARS,
    model_description as describe,
)


def _allowed(exc: Exception, retry: RetrySpec) -> bool:
    return apply_retry_spec(classify_exception(exc), retry, exc)


def test_retry_on_is_an_allow_list_by_class_name_and_base_class() -> None:
    retry = RetrySpec(retry_on=("ConnectionError",))
    assert _allowed(ConnectionError("down"), retry)
    assert _allowed(ConnectionResetError("reset"), retry)  # a subclass is a ConnectionError
    assert not _allowed(ValueError("bad"), retry)  # retryable by default, not on the list
    assert not _allowed(TimeoutError("slow"), retry)
    assert _allowed(ValueError("bad"), RetrySpec())  # no list: the classification decides


def test_retry_on_takes_error_kinds_and_never_makes_a_final_error_retryable() -> None:
    assert _allowed(TimeoutError("slow"), RetrySpec(retry_on=("ToolTimeout",)))
    final = ToolExecutionError("no such row", retryable=False)
    assert not apply_retry_spec(final, RetrySpec(retry_on=("ToolExecutionError",)), None)


def test_non_retryable_errors_match_exception_class_names() -> None:
    assert not _allowed(ConnectionError("down"), RetrySpec(non_retryable_errors=("OSError",)))


def test_retry_on_and_non_retryable_errors_are_exclusive() -> None:
    with pytest.raises(ValidationError, match="exclusive"):
        RetrySpec(retry_on=("ValueError",), non_retryable_errors=("KeyError",))


def ctx() -> ToolContext:
    return ToolContext(tool_call_id="c1", tool_name="t")


async def test_output_validation_uses_the_return_annotation_when_asked() -> None:
    registry = ToolRegistry()

    @registry.tool(validate="output")
    def count(text: str) -> dict[str, int]:
        """Count."""
        return {"n": "many"}  # type: ignore[dict-item]

    spec = registry.get("count").spec
    assert spec.output_schema is not None and spec.validation == "output"
    with pytest.raises(ToolExecutionError, match="output schema") as caught:
        await registry.invoke("count", {"text": "x"}, ctx())
    assert caught.value.retryable is False  # the body ran: never again


async def test_validate_none_passes_schema_tool_arguments_unchecked() -> None:
    registry = ToolRegistry()
    seen: list[dict[str, object]] = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    registry.register_schema(
        lambda arguments, ctx: seen.append(arguments),
        input_schema=schema,
        name="raw",
        validate="none",
    )
    registry.register_schema(lambda arguments, ctx: None, input_schema=schema, name="checked")
    await registry.invoke("raw", {"n": "seven"}, ctx())
    assert seen == [{"n": "seven"}]
    with pytest.raises(Exception, match="integer"):
        await registry.invoke("checked", {"n": "seven"}, ctx())


def test_catalog_metadata_is_on_the_spec_and_filters_the_catalog() -> None:
    registry = ToolRegistry()

    @registry.tool(
        cost_hint="$0.01 a page",
        latency_hint="~2 s",
        safety_notes="sends the file to a third party",
        mime_types=["application/pdf", "image/*"],
        tags=["docs"],
    )
    def ocr(path: str) -> str:
        """Read text from a document."""
        return path

    @registry.tool(transport="http", source="http:api.example.com")
    def weather(city: str) -> str:
        """Weather."""
        return city

    spec = registry.get("ocr").spec
    assert spec.transport == "function" and spec.source is not None
    assert spec.source.startswith("python:") and spec.source.endswith("ocr")
    assert (spec.cost_hint, spec.latency_hint) == ("$0.01 a page", "~2 s")
    names = lambda specs: [s.name for s in specs]  # noqa: E731
    assert names(registry.catalog(mime_type="image/png")) == ["ocr"]
    assert names(registry.catalog(mime_type="text/csv")) == []
    assert names(registry.catalog(transport="http")) == ["weather"]
    assert names(registry.catalog(source="http:*")) == ["weather"]
    assert names(registry.catalog(tag="docs")) == ["ocr"]
    assert names(filter_specs(registry.specs(), transport="function")) == ["ocr"]


def test_require_full_identity_refuses_a_partial_identity() -> None:
    registry = ToolRegistry(require_full_identity=True)

    @registry.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    with pytest.raises(IdentityIncomplete, match="missing: tenant, session"):
        registry.catalog(identity=Identity(user="ana"))
    with pytest.raises(IdentityIncomplete, match="missing: user, tenant, session"):
        registry.catalog()
    full = Identity(user="ana", tenant="acme", session="s1")
    assert [s.name for s in registry.catalog(identity=full)] == ["ping"]


def test_examples_reach_the_model_in_the_description() -> None:
    spec = ToolSpec(name="add", description="Add two numbers.", examples=({"a": 1, "b": 2},))
    assert describe(spec) == 'Add two numbers.\n\nExamples:\n{"a": 1, "b": 2}'
    assert describe(ToolSpec(name="x", description="Plain.")) == "Plain."


def test_safety_notes_reach_the_model_between_the_description_and_the_examples() -> None:
    spec = ToolSpec(
        name="delete_account",
        description="Delete an account.",
        safety_notes="  Deletes for good: confirm the account id with the user first.\n",
        examples=({"account_id": "a1"},),
    )
    assert describe(spec) == (
        "Delete an account.\n\n"
        "Safety notes: Deletes for good: confirm the account id with the user first.\n\n"
        'Examples:\n{"account_id": "a1"}'
    )
    # Runs from before notes reached the model replay with what they were given.
    assert describe(spec, safety_notes=False) == (
        'Delete an account.\n\nExamples:\n{"account_id": "a1"}'
    )
    blank = ToolSpec(name="x", description="", safety_notes="   ")
    assert describe(blank) == ""


def test_long_safety_notes_reach_the_model_cut_and_the_spec_whole() -> None:
    notes = "Check twice. " * 1_000
    spec = ToolSpec(name="x", description="Do x.", safety_notes=notes)
    assert spec.safety_notes == notes  # a recorded catalog reads back as it was recorded
    shown = describe(spec).removeprefix("Do x.\n\nSafety notes: ")
    assert len(shown) == MAX_SAFETY_NOTES_CHARS and shown.endswith("…")
