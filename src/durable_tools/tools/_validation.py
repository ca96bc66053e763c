"""Parsing and validating a model's tool arguments, before anything runs.

Pure and deterministic (no I/O, no clocks), so the agent workflow can call it inside
the Temporal sandbox and fail closed: malformed or invalid arguments never reach an
activity, and the model gets a message it can act on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match, relevance

from ._classify import classify_exception, error_message_for_model
from ._errors import InvalidArguments, ToolExecutionError
from ._spec import ToolSpec

# classify_exception and error_message_for_model live in `_classify`; they are
# re-exported here because validation failures and call failures reach the model
# through the same message.
__all__ = [
    "classify_exception",
    "error_message_for_model",
    "format_schema_errors",
    "parse_arguments",
    "schema_validator",
    "validate_arguments",
    "validate_output",
]

_CACHE_LIMIT = 1024
_cache: dict[tuple[str, str], Draft202012Validator] = {}
_cache_lock = threading.Lock()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


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
            has duplicate keys or NaN/Infinity, or is not a JSON object.
    """
    if isinstance(raw, Mapping):
        return dict(raw)
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
        value = json.loads(raw, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
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
    _check_encodable(value)
    return value


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
    key = (name, json.dumps(schema, sort_keys=True, separators=(",", ":")))
    with _cache_lock:
        found = _cache.get(key)
    if found is not None:
        return found
    Draft202012Validator.check_schema(schema)
    compiled = Draft202012Validator(schema, format_checker=FormatChecker())
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


def validate_arguments(spec: ToolSpec, args: Mapping[str, Any]) -> dict[str, Any]:
    """Check arguments against the tool's input schema (JSON Schema Draft 2020-12).

    Args:
        spec: The tool's spec.
        args: Parsed arguments (see `parse_arguments`).

    Returns:
        The arguments, as a new dict.

    Raises:
        InvalidArguments: one line per violation in `errors`, each with its JSON path.
    """
    validator = schema_validator(spec.name, spec.input_schema)
    lines = format_schema_errors(validator.iter_errors(dict(args)))
    if lines:
        count = "1 problem" if len(lines) == 1 else f"{len(lines)} problems"
        raise InvalidArguments(
            f"arguments for {spec.name!r} break its schema ({count}): {lines[0]}",
            errors=lines,
        )
    return dict(args)


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
