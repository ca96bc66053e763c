"""Model-visible schemas: derived from signatures, hidden parameters, strict mode."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from durable_tools import Injected, ToolContext, ToolRegistrationError, ToolRegistry
from durable_tools.tools._schema_clean import clean_schema
from durable_tools.tools._schema_strict import drop_added_nulls


class Address(BaseModel):
    street: str
    zip_code: str | None = None


class Person(BaseModel):
    """A person."""

    name: str = Field(description="Full name")
    title: str = "Dr"
    address: Address
    tags: list[str] = []


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


class Forecast(BaseModel):
    city: str
    celsius: float


def assert_openai_strict(schema: dict[str, Any]) -> None:
    """OpenAI strict function calling: every object closed, every property required."""
    checked = 0

    def walk(node: Any, path: str) -> None:
        nonlocal checked
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
        if is_object or "properties" in node:
            checked += 1
            assert node.get("additionalProperties") is False, f"{path}: not closed"
            assert sorted(node.get("required", [])) == sorted(node.get("properties", {})), (
                f"{path}: not every property is required"
            )
        assert "default" not in node, f"{path}: default is not allowed in strict mode"
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    walk(sub, f"{path}.{key}.{name}")
            elif key not in ("enum", "const", "required", "examples"):
                walk(value, f"{path}.{key}")

    walk(schema, "$")
    assert checked >= 1


def schema_of(fn: Any, **options: Any) -> dict[str, Any]:
    registry = ToolRegistry()
    return registry.register(fn, **options).spec.input_schema


def test_schema_from_signature_with_docstring_and_field_descriptions() -> None:
    def forecast(
        city: str,
        days: Annotated[int, Field(description="How many days", ge=1, le=10)] = 3,
        units: Literal["metric", "imperial"] = "metric",
    ) -> Forecast:
        """Forecast the weather.

        Args:
            city: The city name.
            days: Overridden by the Field description.
        """
        return Forecast(city=city, celsius=1.0)

    registry = ToolRegistry()
    spec = registry.register(forecast).spec
    assert spec.description == "Forecast the weather."
    schema = spec.input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"] == {"type": "string", "description": "The city name."}
    days = schema["properties"]["days"]
    assert days["description"] == "How many days"
    assert (days["minimum"], days["maximum"], days["default"]) == (1, 10, 3)
    assert schema["properties"]["units"]["enum"] == ["metric", "imperial"]
    assert "title" not in str(schema)
    Draft202012Validator.check_schema(schema)
    # The return annotation gives the output schema.
    assert spec.output_schema is not None
    assert spec.output_schema["required"] == ["city", "celsius"]


def test_field_as_default_keeps_constraints_and_name() -> None:
    def count(n: int = Field(5, ge=0, description="How many")) -> int:
        """Count."""
        return n

    schema = schema_of(count)
    assert schema["properties"] == {
        "n": {"type": "integer", "minimum": 0, "default": 5, "description": "How many"}
    }


def test_parameters_named_like_basemodel_attributes_work() -> None:
    def lookup(json: str, schema: str, model_name: str, copy: bool = False) -> str:
        """Look up."""
        return json

    assert set(schema_of(lookup)["properties"]) == {"json", "schema", "model_name", "copy"}


def test_injected_parameters_are_hidden() -> None:
    def send(
        to: str,
        ctx: ToolContext,
        client: Annotated[object, Injected("http")],
        token: Annotated[str, Injected("api_token", secret=True)],
        maybe_ctx: ToolContext | None = None,
    ) -> str:
        """Send."""
        return to

    schema = schema_of(send)
    assert list(schema["properties"]) == ["to"]
    assert schema["required"] == ["to"]
    text = str(schema)
    for hidden in ("ctx", "client", "token", "http", "api_token"):
        assert hidden not in text


@pytest.mark.parametrize("variadic", ["args", "kwargs"])
def test_variadic_parameters_are_rejected(variadic: str) -> None:
    def with_args(city: str, *args: str) -> str:
        """x."""
        return city

    def with_kwargs(city: str, **kwargs: str) -> str:
        """x."""
        return city

    fn = with_args if variadic == "args" else with_kwargs
    with pytest.raises(ToolRegistrationError) as caught:
        ToolRegistry().register(fn)
    assert caught.value.rule == "signature"
    assert f"*{variadic}" in str(caught.value)


def test_positional_only_and_unresolvable_annotations_are_rejected() -> None:
    def positional(a: int, /) -> int:
        """x."""
        return a

    with pytest.raises(ToolRegistrationError, match="positional-only"):
        ToolRegistry().register(positional)

    def unresolved(a: NotDefinedAnywhere) -> int:  # type: ignore[name-defined]  # noqa: F821
        """x."""
        return 1

    with pytest.raises(ToolRegistrationError, match="cannot resolve") as caught:
        ToolRegistry().register(unresolved)
    assert caught.value.rule == "signature"


def test_single_pydantic_model_argument_uses_the_model_schema() -> None:
    def create_person(person: Person, ctx: ToolContext) -> str:
        """Create a person."""
        return person.name

    schema = schema_of(create_person)
    assert set(schema["properties"]) == {"name", "title", "address", "tags"}
    assert schema["properties"]["name"]["description"] == "Full name"
    # A property called `title` survives the title clean-up.
    assert schema["properties"]["title"] == {"type": "string", "default": "Dr"}
    assert schema["properties"]["address"]["properties"]["street"] == {"type": "string"}
    assert "$defs" not in schema  # non-recursive refs are inlined
    assert schema["additionalProperties"] is False


def test_recursive_models_keep_defs() -> None:
    def plant(tree: Tree) -> str:
        """Plant."""
        return tree.label

    schema = schema_of(plant)
    assert "$defs" in schema and "Tree" in schema["$defs"]
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"label": "a", "children": [{"label": "b", "children": []}]})
    assert not validator.is_valid({"label": "a", "children": [{"label": 3}]})


def strict_sample_tools() -> list[Any]:
    def flat(city: str, days: int = 3, note: str | None = None) -> str:
        """Flat."""
        return city

    def nested(person: Person) -> str:
        """Nested."""
        return person.name

    def lists(people: list[Person], labels: list[str] | None = None) -> str:
        """Lists."""
        return ""

    def optional_nested(address: Address | None = None, mode: Literal["a", "b"] = "a") -> str:
        """Optional nested."""
        return ""

    def recursive(tree: Tree, depth: int = 1) -> str:
        """Recursive."""
        return tree.label

    def no_args() -> str:
        """No args."""
        return ""

    return [flat, nested, lists, optional_nested, recursive, no_args]


@pytest.mark.parametrize("fn", strict_sample_tools(), ids=lambda f: f.__name__)
def test_strict_schemas_satisfy_openai_rules(fn: Any) -> None:
    schema = schema_of(fn, strict=True)
    assert_openai_strict(schema)
    Draft202012Validator.check_schema(schema)


def test_the_strict_checker_catches_violations() -> None:
    def flat(city: str, days: int = 3) -> str:
        """Flat."""
        return city

    with pytest.raises(AssertionError, match="not every property is required"):
        assert_openai_strict(schema_of(flat))
    with pytest.raises(AssertionError, match="not closed"):
        assert_openai_strict({"type": "object", "properties": {}, "required": []})


def test_strict_makes_optional_parameters_nullable() -> None:
    def flat(
        city: str, days: int = 3, note: str | None = None, where: Address | None = None
    ) -> str:
        """Flat."""
        return city

    props = schema_of(flat, strict=True)["properties"]
    assert props["city"] == {"type": "string"}
    assert props["days"]["type"] == ["integer", "null"]
    assert {"type": "null"} in props["note"]["anyOf"]
    assert {"type": "null"} in props["where"]["anyOf"]


def test_strict_rejects_free_form_objects() -> None:
    def loose(data: dict[str, int]) -> str:
        """Loose."""
        return ""

    def untyped(data: Any) -> str:
        """Untyped."""
        return ""

    for fn in (loose, untyped):
        with pytest.raises(ToolRegistrationError) as caught:
            ToolRegistry().register(fn, strict=True)
        assert caught.value.rule == "strict"
        assert "$.properties.data" in str(caught.value)
    # Without strict, a dict parameter is fine.
    assert schema_of(loose)["properties"]["data"]["type"] == "object"


def test_drop_added_nulls_restores_defaults_only_where_null_was_not_allowed() -> None:
    def flat(days: int = 3, note: str | None = "x", where: Address | None = None) -> str:
        """Flat."""
        return ""

    tool = ToolRegistry().register(flat, strict=True)
    lax = tool.plan.lax_schema
    assert drop_added_nulls({"days": None, "note": None}, lax) == {"note": None}
    nested = drop_added_nulls({"where": {"street": "s", "zip_code": None}}, lax)
    assert nested == {"where": {"street": "s", "zip_code": None}}  # zip_code accepts null
    assert tool.to_python({"days": None, "note": None, "where": None}) == {
        "days": 3,
        "note": None,
        "where": None,
    }


def test_clean_schema_leaves_data_alone() -> None:
    raw = {
        "title": "T",
        "type": "object",
        "properties": {"title": {"title": "Title", "type": "string", "default": "title"}},
        "$defs": {"Unused": {"title": "Unused", "type": "string"}},
    }
    assert clean_schema(raw) == {
        "type": "object",
        "properties": {"title": {"type": "string", "default": "title"}},
    }
