"""The host stubs a script is checked against, built from tools' JSON schemas."""

from __future__ import annotations

import ast
import asyncio
from typing import Any

import pydantic_monty as monty
import pytest

from durable_tools import CodeMode, ToolSpec
from durable_tools.workflows.script._stubs import host_specs, host_stubs, script_definition


def spec(name: str, properties: dict[str, Any], required: list[str], **more: Any) -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolSpec(name=name, input_schema=schema, **more)


def check(stubs: str, script: str) -> str | None:
    """Monty's type checker on `script` against `stubs`: its diagnostics, or None."""

    async def run() -> str | None:
        async with monty.AsyncMonty(min_processes=1, max_processes=1) as pool:
            checkout = pool.checkout(
                type_check=True, type_check_stubs=stubs, type_check_format="concise"
            )
            async with checkout as session:
                try:
                    await session.feed_start(script)
                except monty.MontyTypingError as error:
                    return str(error.display())
        return None

    return asyncio.run(run())


WEATHER = spec(
    "weather",
    {
        "city": {"type": "string"},
        "unit": {"enum": ["c", "f"]},
        "days": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "at": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    },
    ["city"],
    description="Weather of a city.",
)


def test_schema_types_become_keyword_only_parameters() -> None:
    stubs = host_stubs({"weather": WEATHER})
    assert (
        "async def weather(*, city: str, unit: Literal['c', 'f'] = ..., days: int = ..., "
        "tags: list[str] = ..., at: float | None = ...) -> Any: ..."
    ) in stubs
    assert "# Weather of a city." in stubs


def test_the_checker_accepts_good_calls_and_names_bad_ones() -> None:
    stubs = host_stubs({"weather": WEATHER})
    assert check(stubs, 'await weather(city="Oslo", unit="c", days=2, at=None)') is None
    problems = check(stubs, 'await weather("Oslo")\nawait weather(city="x", unit="k", dayz=1)')
    assert problems is not None
    assert "positional" in problems or "Too many" in problems
    assert "`dayz`" in problems and 'Literal["k"]' in problems


def test_hostile_descriptions_names_and_enums_cannot_inject_stub_code() -> None:
    hostile = spec(
        "evil",
        {
            "x": {"enum": ['a"""\nimport os\n', "b'\\"]},
            "not-an-identifier": {"type": "string"},
            "class": {"type": "string"},
        },
        ["x"],
        description='ok\nasync def lookup(): ...\u2028import os """ \x00',
    )
    stubs = host_stubs({"evil": hostile})
    tree = ast.parse(stubs)
    defined = [n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef)]
    assert defined == ["evil"]  # one function per tool, nothing else defined
    assert not [n for n in tree.body if isinstance(n, ast.Import)]
    assert "**kwargs: Any" in stubs  # the names no keyword can spell


def test_only_tools_named_as_identifiers_that_shadow_nothing_are_host_functions() -> None:
    tools = {n: ToolSpec(name=n) for n in ["lookup", "get-weather", "print", "len", "run_script"]}
    assert list(host_specs(tools)) == ["lookup"]


def test_a_tool_named_like_an_exception_cannot_break_the_scripts_that_catch_it() -> None:
    # A tool (or MCP server) named `TypeError` would make `except TypeError` fail to check
    # in every script of the run.
    names = ["TypeError", "PermissionError", "Exception", "exec", "__import__", "ok"]
    tools = {n: spec(n, {"x": {"type": "string"}}, ["x"]) for n in names}
    hosts = host_specs(tools)
    assert list(hosts) == ["ok"]
    script = 'try:\n    await ok(x="1")\nexcept (TypeError, PermissionError, Exception):\n    pass'
    assert check(host_stubs(hosts), script) is None


@pytest.mark.parametrize(
    ("schema", "hint"),
    [
        ({"type": ["string", "integer"]}, "str | int"),
        ({"$ref": "#/defs/x"}, "Any"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"const": True}, "Literal[True]"),
        ({"enum": [1.5]}, "Any"),
        (
            {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}},
            "list[list[bool]]",
        ),
    ],
)
def test_schema_to_type(schema: dict[str, Any], hint: str) -> None:
    stubs = host_stubs({"f": spec("f", {"v": schema}, ["v"])})
    assert f"async def f(*, v: {hint}) -> Any" in stubs


def test_the_model_reads_the_contract_and_the_signatures() -> None:
    definition = script_definition({"weather": WEATHER}, CodeMode(max_host_calls=7))
    assert definition.name == "run_script"
    assert "At most 7 tool calls per script" in definition.description
    assert "async def weather(" in definition.description
    assert definition.parameters["required"] == ["script"]
