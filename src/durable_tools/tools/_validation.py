"""Parsing and validating a model's tool arguments, before anything runs.

Pure and deterministic (no I/O, no clocks), so the agent workflow can call it inside
the Temporal sandbox and fail closed: malformed or invalid arguments never reach an
activity, and the model gets a message it can act on.

What passes is also what an activity input can carry: an object at most `MAX_DEPTH`
levels deep, finite numbers only, valid Unicode text. Anything else would be accepted here
and then fail to serialise when the call is scheduled, which wedges the run.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match, relevance
from jsonschema.validators import extend

from ._errors import InvalidArguments, ToolExecutionError
from ._spec import ToolSpec

__all__ = [
    "MAX_DEPTH",
    "CheckedArguments",
    "check_arguments",
    "format_schema_errors",
    "non_finite_number",
    "parse_arguments",
    "safety_digest",
    "schema_digest",
    "schema_validator",
    "validate_arguments",
    "validate_output",
]

MAX_DEPTH = 64
"""How deeply arguments may nest; the top-level object is level 1.

Far above what a tool's arguments need, and far below the ~255 levels at which
pydantic-core refuses to serialise an activity input.
"""

_CACHE_LIMIT = 1024
_cache: dict[tuple[str, str], tuple[Draft202012Validator, str]] = {}
_cache_lock = threading.Lock()


def _constant(name: str) -> float:
    # `NaN`, `Infinity`, `-Infinity`: not JSON. Read as floats so that `_check_tree`
    # refuses them with the path where they stand.
    return float(name)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated key is ambiguous: Python keeps the last, another reader the first.
    # Refusing it is the fail-closed choice.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def parse_arguments(raw: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """Parse a model's arguments into a JSON object.

    Empty text is malformed, never silently `{}`: a model that sent nothing for a tool
    that needs arguments must hear about it.

    Args:
        raw: The arguments as the model wrote them (JSON text), or an already parsed mapping.

    Returns:
        A new dict of the arguments.

    Raises:
        InvalidArguments: the text is empty, not JSON (the message gives the position),
            has duplicate keys, NaN/Infinity or a number that overflows to infinity
            (`1e400`), nests deeper than `MAX_DEPTH`, or is not a JSON object.
    """
    if isinstance(raw, Mapping):
        value = dict(raw)
        _check_tree(value)
        return value
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArguments(
                f"arguments are not valid UTF-8 (byte {exc.start})",
                errors=[f"$: not valid UTF-8 at byte {exc.start}"],
            ) from None
    if not isinstance(raw, str):
        raise InvalidArguments(
            f"arguments must be a JSON object, got {type(raw).__name__}",
            errors=[f"$: expected a JSON object, got {type(raw).__name__}"],
        )
    if not raw.strip():
        raise InvalidArguments(
            "arguments are empty: send a JSON object, e.g. {} when no argument is needed",
            errors=["$: empty text is not a JSON object"],
        )
    try:
        value = json.loads(raw, object_pairs_hook=_no_duplicates, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno} (char {exc.pos})"
        raise InvalidArguments(
            f"arguments are not valid JSON: {exc.msg} at {where}",
            errors=[f"$: malformed JSON: {exc.msg} at {where}"],
        ) from None
    except ValueError as exc:
        raise InvalidArguments(
            f"arguments are not valid JSON: {exc}", errors=[f"$: {exc}"]
        ) from None
    except RecursionError:
        raise InvalidArguments(
            "arguments are nested too deeply", errors=["$: nested too deeply"]
        ) from None
    if not isinstance(value, dict):
        raise InvalidArguments(
            f"arguments must be a JSON object, got {_json_type(value)}",
            errors=[f"$: expected a JSON object, got {_json_type(value)}"],
        )
    _check_tree(value)
    _check_encodable(value)
    return value


def _path(parts: Iterable[str | int]) -> str:
    # The JSON path notation of jsonschema's errors, with long keys cut: the path goes
    # into the model's repair message, which must stay short whatever the model sent.
    path = "$"
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", part):
            path += f".{part}"
        else:
            key = part if len(part) <= 40 else part[:40] + "..."
            path += "[" + json.dumps(key) + "]"
    return path if len(path) <= 200 else path[:200] + "..."


def _nodes(value: Any) -> Iterator[tuple[tuple[str | int, ...], Any, int]]:
    """Every value in a JSON tree with its path and level (the root is level 1), in
    document order. Iterative, so that no nesting can exhaust the Python stack."""
    stack: list[tuple[tuple[str | int, ...], Any, int]] = [((), value, 1)]
    while stack:
        path, node, depth = stack.pop()
        yield path, node, depth
        children: Iterable[tuple[str | int, Any]]
        if isinstance(node, dict):
            children = node.items()
        elif isinstance(node, list | tuple):
            children = enumerate(node)
        else:
            continue
        stack.extend(((*path, key), child, depth + 1) for key, child in reversed(list(children)))


def _check_tree(value: dict[str, Any]) -> None:
    for path, node, depth in _nodes(value):
        if isinstance(node, dict | list) and depth > MAX_DEPTH:
            raise InvalidArguments(
                f"arguments are nested deeper than the limit of {MAX_DEPTH} levels",
                errors=[
                    f"{_path(path)}: nested deeper than the limit of {MAX_DEPTH} levels: "
                    "send a flatter structure"
                ],
            )
        # json.loads turns a number too large for a float (1e400) into inf; an activity
        # input would carry it as null, so a limit the model set could arrive as "none".
        if isinstance(node, float) and math.isnan(node):
            raise InvalidArguments(
                f"arguments contain NaN at {_path(path)}, which is not valid JSON",
                errors=[f"{_path(path)}: NaN is not valid JSON: send a finite number"],
            )
        if isinstance(node, float) and not math.isfinite(node):
            raise InvalidArguments(
                f"arguments contain a number out of range at {_path(path)}",
                errors=[
                    f"{_path(path)}: number out of range (it is not a finite 64-bit "
                    "float): send a finite number"
                ],
            )


def non_finite_number(value: Any, root: str = "$") -> str | None:
    """Where `value` holds NaN or an infinity, as `<json path> (NaN)`, else None.

    JSON has no such numbers: Python's `json` and pydantic read `NaN`, `Infinity` and
    `1e999` as floats, and write them back as `NaN`/`Infinity`, which a model or a JSON
    parser then reads as broken text. Checks nested dicts, lists and tuples, iteratively.

    Args:
        value: A JSON-like value.
        root: How the path starts (`$.output` for an answer's `output` field).
    """
    for path, node, _ in _nodes(value):
        if isinstance(node, float) and not math.isfinite(node):
            said = "NaN" if math.isnan(node) else "Infinity" if node > 0 else "-Infinity"
            return f"{_path(path).replace('$', root, 1)} ({said})"
    return None


def _check_encodable(value: dict[str, Any]) -> None:
    # JSON may escape lone UTF-16 surrogates ("\ud800"), which no UTF-8 payload can carry:
    # accepted, they would make the call's activity input unserialisable and wedge the run.
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArguments(
            "arguments contain an unpaired UTF-16 surrogate, which is not valid text",
            errors=[f"$: unpaired surrogate {exc.object[exc.start]!r}: send valid Unicode text"],
        ) from None
    except RecursionError:
        raise InvalidArguments(
            "arguments are nested too deeply", errors=["$: nested too deeply"]
        ) from None


def schema_validator(name: str, schema: Mapping[str, Any]) -> Draft202012Validator:
    """The compiled validator of a schema, cached by tool name and schema content.

    The key is the schema's canonical JSON rather than its object identity: in a
    workflow, specs are rebuilt from history, and a changed tool (same name, new
    schema) must never be checked against the old one.
    """
    return _compiled(name, schema)[0]


def _compiled(name: str, schema: Mapping[str, Any]) -> tuple[Draft202012Validator, str]:
    """`schema_validator`'s cache entry: the validator and the schema's `schema_digest`."""
    key = (name, json.dumps(schema, sort_keys=True, separators=(",", ":")))
    with _cache_lock:
        found = _cache.get(key)
    if found is not None:
        return found
    Draft202012Validator.check_schema(schema)
    compiled = (Draft202012Validator(schema, format_checker=FormatChecker()), schema_digest(schema))
    with _cache_lock:
        if len(_cache) >= _CACHE_LIMIT:
            del _cache[next(iter(_cache))]
        _cache[key] = compiled
    return compiled


def _describe(error: ValidationError) -> str:
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = (
            sorted(error.schema.get("properties", {})) if isinstance(error.schema, dict) else []
        )
        extra = sorted(set(error.instance) - set(allowed))
        names = ", ".join(repr(x) for x in extra)
        verb = "is not an argument" if len(extra) == 1 else "are not arguments"
        allowed_text = ", ".join(allowed) if allowed else "none"
        return f"{error.json_path}: {names} {verb} the model may set (allowed: {allowed_text})"
    return f"{error.json_path}: {error.message}"


def _contains(error: ValidationError, target: ValidationError) -> bool:
    if error is target:
        return True
    return any(_contains(sub, target) for sub in error.context or ())


def format_schema_errors(errors: Iterable[ValidationError]) -> list[str]:
    """One line per violation, `<json path>: <message>`, the most relevant first."""
    found = list(errors)
    if not found:
        return []
    best = best_match(found)
    assert best is not None
    rest = sorted(
        (e for e in found if not _contains(e, best)),
        key=lambda e: (tuple(str(p) for p in e.absolute_path), relevance(e)),
    )
    lines: list[str] = []
    for error in [best, *rest]:
        line = _describe(error)
        if line not in lines:
            lines.append(line)
    return lines


def schema_digest(schema: Mapping[str, Any]) -> str:
    """A short digest of an input schema: tells the schema a call was checked against
    (and approved under) from the tool's schema when it runs."""
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def safety_digest(spec: ToolSpec) -> str:
    """A short digest of what the policy's safety rules read of a tool: its safety flags,
    where it is confined, how far its effects reach, and its tags.

    What a person approved (a call, or a standing grant) binds it next to the input
    schema's `schema_digest`: a tool the worker made a shell tool since, or moved out of
    its workspace, is no longer the tool they saw.
    """
    safety = spec.safety
    read = {
        "read_only": safety.read_only,
        "networked": safety.networked,
        "filesystem": safety.filesystem,
        "shell": safety.shell,
        "spends_money": safety.spends_money,
        "workspace_root": safety.workspace_root,
        "side_effect": safety.side_effect,
        "tags": sorted(spec.tags),
    }
    return schema_digest(read)  # the same canonical digest, of another mapping


@dataclass(frozen=True)
class CheckedArguments:
    """A call's arguments that passed `check_arguments`."""

    values: dict[str, Any]
    """Parsed, and valid under the tool's input schema when its spec checks input (an
    integral float where the schema asks for an integer made an `int`)."""
    schema: str
    """`schema_digest` of the input schema they were checked against: what a person's
    approval of them binds (the worker then checks them against it, not against a schema
    changed since). On the worker, for approved arguments of a tool whose schema changed
    since, the approved schema's digest: they were not checked against the current one."""


def check_arguments(
    spec: ToolSpec, raw: str | bytes | Mapping[str, Any], *, bound_schema: str | None = None
) -> CheckedArguments:
    """The one check of a call's arguments, in the workflow before anything is scheduled
    and again on the worker: parsed (`parse_arguments`), then checked against the tool's
    input schema when its spec checks input (`ToolSpec.validation`; `validate_arguments`).

    Args:
        spec: The tool called.
        raw: The arguments as the model wrote them, or a parsed mapping.
        bound_schema: `schema_digest` of the input schema a person approved the call
            under (the worker's check): when the tool's schema is another one now, the
            arguments are parsed but not checked against it, since the approval binds
            what the approver saw.

    Returns:
        The arguments and the digest of the schema they are bound to: the one they were
        checked against, or `bound_schema` when the tool's schema is another one now
        (then they were parsed, not checked against the tool's schema).

    Raises:
        InvalidArguments: what is wrong, one line per problem in `errors`, each with its
            JSON path (the model's repair message is made of them).
    """
    values = parse_arguments(raw)
    if not spec.validates_input:
        return CheckedArguments(values, bound_schema or schema_digest(spec.input_schema))
    validator, digest = _compiled(spec.name, spec.input_schema)
    if bound_schema is not None and bound_schema != digest:
        return CheckedArguments(values, bound_schema)  # never claims a schema it skipped
    return CheckedArguments(_validated(validator, spec.name, values), digest)


def validate_arguments(spec: ToolSpec, args: Mapping[str, Any]) -> dict[str, Any]:
    """Check arguments against the tool's input schema (JSON Schema Draft 2020-12).

    JSON Schema counts a number with a zero fractional part (`2.0`) as an integer, so the
    schema accepts it where it asks for `"integer"`; there it is returned as an `int`, and
    that is what the tool receives and the run records. A float anywhere else is left alone.

    Args:
        spec: The tool's spec.
        args: Parsed arguments (see `parse_arguments`).

    Returns:
        The arguments, as a new dict, integral floats at integer places made `int`.

    Raises:
        InvalidArguments: one line per violation in `errors`, each with its JSON path.
    """
    return _validated(schema_validator(spec.name, spec.input_schema), spec.name, args)


def _validated(
    validator: Draft202012Validator, tool: str, args: Mapping[str, Any]
) -> dict[str, Any]:
    value = dict(args)
    lines = format_schema_errors(validator.iter_errors(value))
    if lines:
        count = "1 problem" if len(lines) == 1 else f"{len(lines)} problems"
        raise InvalidArguments(
            f"arguments for {tool!r} break its schema ({count}): {lines[0]}",
            errors=lines,
        )
    return _integers_as_int(validator, value)


def _is_strict_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


# The same draft with "integer" meaning a JSON number written without a fraction: on
# arguments the real validator accepts, each of its type errors marks an integral float
# standing where the schema asks for an integer.
_StrictIntegers = extend(  # type: ignore[no-untyped-call]  # the stubs leave it untyped
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_strict_integer),
)


def _is_integral_float(value: Any) -> bool:
    return isinstance(value, float) and value.is_integer()


def _integer_places(errors: Iterable[ValidationError]) -> Iterator[tuple[str | int, ...]]:
    for error in errors:
        types = error.validator_value
        wants_integer = types == "integer" or (isinstance(types, list) and "integer" in types)
        if error.validator == "type" and wants_integer and _is_integral_float(error.instance):
            yield tuple(error.absolute_path)
        yield from _integer_places(error.context or ())


def _integers_as_int(validator: Draft202012Validator, value: dict[str, Any]) -> dict[str, Any]:
    if not any(_is_integral_float(node) for _, node, _ in _nodes(value)):
        return value  # the common case: nothing to look for
    strict = _StrictIntegers(validator.schema, format_checker=validator.format_checker)
    places = set(_integer_places(strict.iter_errors(value)))
    if not places:
        return value
    value = copy.deepcopy(value)  # nested containers are still the caller's
    for place in places:
        parent: Any = value
        for part in place[:-1]:
            parent = parent[part]
        parent[place[-1]] = int(parent[place[-1]])
    return value


def validate_output(spec: ToolSpec, value: Any) -> None:
    """Check a tool's structured result against its output schema, if it has one.

    Raises:
        ToolExecutionError: not retryable; the tool returned something its own schema
            forbids, which another attempt will not fix.
    """
    if spec.output_schema is None:
        return
    validator = schema_validator(f"{spec.name}#output", spec.output_schema)
    lines = format_schema_errors(validator.iter_errors(value))
    if lines:
        raise ToolExecutionError(
            f"tool {spec.name!r} returned a result that breaks its output schema: {lines[0]}",
            retryable=False,
            details={"errors": lines},
        )
