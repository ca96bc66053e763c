"""The host functions a script may call, as Python stubs built from the tools' schemas.

The same text serves twice: the sandbox type-checks the script against it before any of
it runs, and the model reads it in `run_script`'s description. Only what the schema says
becomes a type; what it cannot say (`$ref`, nested objects) is `Any`, so the checker never
refuses a call the tool would accept. Every name in the text is a checked identifier and
every literal a `repr`: nothing a tool author (or an MCP server) writes can inject code
into the stubs; descriptions become one-line comments.
"""

from __future__ import annotations

import json
import keyword
from types import MappingProxyType
from typing import Any

from durable_tools.messages import ToolDefinition
from durable_tools.protocol._code_mode import SCRIPT_TOOL, CodeMode
from durable_tools.tools import ToolSpec

__all__ = ["host_specs", "host_stubs", "script_definition"]

_MAX_DEPTH = 6
_MAX_LITERALS = 32
_MAX_DESCRIPTION = 200

# Names a host function must not shadow: Python's builtins (exceptions included: a tool
# named `TypeError` would break every script's `except TypeError`), the sandbox's modules
# and the stubs' own names. Spelled out (not read from `builtins`) so the stubs do not
# change with the worker's Python.
_RESERVED_NAMES = """abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable
    chr classmethod compile complex copyright credits delattr dict dir divmod enumerate eval
    exec exit filter float format frozenset getattr globals hasattr hash help hex id input int
    isinstance issubclass iter len license list locals map max memoryview min next object oct
    open ord pow print property quit range repr reversed round set setattr slice sorted
    staticmethod str sum super tuple type vars zip
    ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup
    BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError
    ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError
    DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception
    ExceptionGroup FileExistsError FileNotFoundError FloatingPointError FutureWarning
    GeneratorExit IOError ImportError ImportWarning IndentationError IndexError
    InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError
    ModuleNotFoundError NameError NotADirectoryError NotImplemented NotImplementedError
    OSError OverflowError PendingDeprecationWarning PermissionError ProcessLookupError
    RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning
    StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit
    TabError TimeoutError TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError
    UnicodeError UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning
    ZeroDivisionError
    asyncio main json math re datetime time random os sys typing Any Literal None True False"""
_RESERVED = frozenset(_RESERVED_NAMES.split())

_SCALARS = MappingProxyType(
    {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
)


def host_specs(offered: dict[str, ToolSpec]) -> dict[str, ToolSpec]:
    """The offered tools a script can call: those whose name is a usable identifier."""
    return {
        name: spec
        for name, spec in offered.items()
        if name.isidentifier()
        and name.isascii()
        and not keyword.iskeyword(name)
        and name not in _RESERVED
        and not name.startswith("__")
        and name != SCRIPT_TOOL
    }


def host_stubs(hosts: dict[str, ToolSpec]) -> str:
    """Stubs of the host functions: `async def name(*, arg: T, ...) -> R`, keyword-only."""
    # The sandbox raises PermissionError for a denied call, but its type checker's
    # builtins lack the name: declared here so `except PermissionError` checks.
    lines = ["from typing import Any, Literal", "", "class PermissionError(OSError): ...", ""]
    for name, spec in hosts.items():
        lines.append(f"# {_one_line(spec.description)}")
        lines.append(f"async def {name}({_parameters(spec.input_schema)}) -> {_returns(spec)}: ...")
        lines.append("")
    return "\n".join(lines)


def script_definition(hosts: dict[str, ToolSpec], config: CodeMode) -> ToolDefinition:
    """What the model is told about `run_script`: the contract, then the host stubs."""
    description = (
        "Run a Python script that calls the tools below as async functions, and get back "
        "what it printed and the value of its last line. Use it instead of many separate "
        "tool calls: loops, conditions and arithmetic over tool results in one step.\n"
        "- Tools are async and keyword-only: `r = await lookup(city='Paris')`; run "
        "independent calls at once with `await asyncio.gather(...)`.\n"
        "- Results are the tool's JSON value (dicts, lists, numbers) or its text.\n"
        "- A failed call raises: PermissionError (denied by a person or policy), TypeError "
        "(invalid arguments), TimeoutError, RuntimeError (the tool failed). Catch them to "
        "go on.\n"
        "- Calls that need approval wait for it, as when you call the tool directly.\n"
        "- No files, network or imports beyond asyncio, json, math, re, datetime, time, "
        f"random. At most {config.max_host_calls} tool calls per script; "
        f"{config.max_step_seconds:g} s of computing between two calls.\n"
        "- The script is type-checked against these signatures first; a mismatch is "
        "reported and nothing runs.\n\n" + host_stubs(hosts)
    )
    return ToolDefinition(
        name=SCRIPT_TOOL,
        description=description,
        parameters={
            "type": "object",
            "properties": {
                "script": {
                    "type": "string",
                    "description": "Python source; top-level `await` is allowed.",
                    "maxLength": config.max_script_chars,
                }
            },
            "required": ["script"],
            "additionalProperties": False,
        },
    )


def _one_line(text: str) -> str:
    """A description as a comment: printable characters only, on one line, bounded."""
    first = text.strip().split("\n", 1)[0]
    clean = "".join(ch if ch.isprintable() else " " for ch in first)
    return clean[:_MAX_DESCRIPTION] or "(no description)"


def _parameters(schema: dict[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return "**kwargs: Any" if schema.get("additionalProperties", True) is not False else ""
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    params: list[str] = []
    loose = False
    for name, sub in properties.items():
        if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
            loose = True  # not writable as a keyword argument: accept it through **kwargs
            continue
        hint = _type(sub, 0)
        params.append(f"{name}: {hint}" if name in needed else f"{name}: {hint} = ...")
    # Required ones first: Python wants them before the defaulted ones.
    params.sort(key=lambda p: p.endswith("= ..."))
    head = "*, " + ", ".join(params) if params else ""
    if loose:
        head = f"{head}, **kwargs: Any" if head else "**kwargs: Any"
    return head


def _returns(spec: ToolSpec) -> str:
    schema = spec.output_schema
    if not isinstance(schema, dict):
        return "Any"
    hint = _type(schema, 0)
    # A structured value may reach the script as the tool's text when it was too large to
    # keep: only scalars are promised exactly.
    return hint if hint in {"str", "int", "float", "bool"} else "Any"


def _type(schema: Any, depth: int) -> str:
    """The Python type a JSON schema admits, as stub text (`Any` when unsure)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return "Any"
    if "const" in schema:
        return _literal([schema["const"]])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _literal(enum)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _union([_type(option, depth + 1) for option in options])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_type({**schema, "type": one}, depth + 1) for one in kind])
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return f"list[{_type(schema.get('items'), depth + 1)}]"
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def _literal(values: list[Any]) -> str:
    if len(values) > _MAX_LITERALS or not all(
        v is None or isinstance(v, (str, int, bool)) for v in values
    ):
        return "Any"
    # `repr` of a str is a valid, closed Python literal whatever it holds; JSON text of
    # an int or bool is too (after mapping JSON's spelling to Python's).
    spelled = [
        repr(v)
        if isinstance(v, str)
        else json.dumps(v).replace("true", "True").replace("false", "False").replace("null", "None")
        for v in values
    ]
    return f"Literal[{', '.join(spelled)}]"


def _union(hints: list[str]) -> str:
    unique = list(dict.fromkeys(hints))
    if "Any" in unique:
        return "Any"
    return unique[0] if len(unique) == 1 else " | ".join(unique)
