"""Turning a function and its registration options into a `RegisteredTool`.

All checking happens here (names, signature, schema, examples, options), so a
mistake fails the worker at start-up instead of a run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal, TypedDict

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ValidationError as PydanticValidationError

from ._approval_summary import SummaryFunction, SummaryTemplateError, check_template
from ._auto_local import resolve_local
from ._context import Identity
from ._docstrings import parse_docstring
from ._names import NameStyle, ToolRegistrationError, check_alias, check_tool_name
from ._registered import ApprovalPredicate, RegisteredTool
from ._schema import SignaturePlan, output_schema_for, plan_signature
from ._schema_clean import schema_for_model
from ._schema_tools import SchemaTool, plan_for_schema
from ._spec import (
    ExecutionPolicy,
    LoadingMode,
    OAuthRequirement,
    RetrySpec,
    Safety,
    SideEffect,
    ToolSpec,
    Transport,
    ValidateMode,
)
from ._validation import format_schema_errors, schema_validator

__all__ = ["ToolOptions", "build_tool"]

_SAFETY_KEYS = tuple(Safety.model_fields)
_POLICY_KEYS = tuple(ExecutionPolicy.model_fields)


class ToolOptions(TypedDict, total=False):
    """Keyword options of `ToolRegistry.tool` and `ToolRegistry.register`.

    Safety and policy can be given whole (`safety=`, `policy=`) or as flat keywords
    (`read_only=True`, `start_to_close_timeout=30`); flat keywords win.
    """

    name: str
    """Defaults to the function's name; checked against the registry's naming rule."""
    description: str
    """Defaults to the docstring's text before its first section (`Args:` ...)."""
    tags: Sequence[str]
    auth_scopes: Sequence[str]
    loading: LoadingMode | Literal["always", "deferred"]
    safety: Safety
    """All safety flags at once; the flat keywords below override its fields."""
    read_only: bool
    idempotent: bool
    networked: bool
    filesystem: bool
    shell: bool
    spends_money: bool
    requires_confirmation: bool
    workspace_root: str | None
    redact: Sequence[str]
    side_effect: SideEffect
    policy: ExecutionPolicy
    """All execution options at once; the flat keywords below override its fields.

    `retry.retry_timeouts` left None is resolved at registration: True only for
    read-only or idempotent tools.
    """
    start_to_close_timeout: float | timedelta
    schedule_to_close_timeout: float | timedelta | None
    heartbeat_timeout: float | timedelta | None
    retry: RetrySpec
    task_queue: str | None
    local: bool | None
    """True: a local activity; False: a regular one; None (default): chosen at registration
    (local only for read-only, short, plain Python tools; see `tools/_auto_local.py`)."""
    max_concurrent: int | None
    """Most calls running at once per worker process, over all runs (own task queue)."""
    rate_limit: float | None
    """Most calls started per second across the deployment (Temporal enforces it)."""
    max_calls_per_run: int | None
    """Most calls one run may make; further calls get a "budget used up" message."""
    approval: bool | ApprovalPredicate
    """True: always ask a person; a predicate over the validated arguments: ask when it
    returns True (or raises). The predicate stays on the worker."""
    approval_summary: str | SummaryFunction | None
    """What a call does, in a line, for the person asked to approve it: a template of the
    arguments (`"Refund {amount_cents:money} on order {order_id}"`; see
    `tools._approval_summary` for its formatters) or a function of the arguments (run on
    the worker, never in workflow code). Secret-marked arguments never reach it."""
    oauth: OAuthRequirement | None
    aliases: Mapping[str, str]
    """Provider key (a model spec prefix, lowercase) -> another name the tool answers to
    for that provider's models, e.g. {"anthropic": "getWeather"}."""
    strict: bool
    """OpenAI strict function calling: all properties required, optional ones nullable.
    Examples of a strict tool must then list every property (null for "not given")."""
    examples: Sequence[Mapping[str, Any]]
    """Example arguments, validated against the input schema at registration."""
    output_schema: Mapping[str, Any] | type[BaseModel] | None
    """Defaults to the schema of a pydantic return annotation."""
    visible_to: Callable[[Identity], bool] | None
    """Worker-side rule hiding the tool from some identities in `catalog()`."""
    validate: ValidateMode
    """What is checked: `input`, `output`, `both` (default) or `none`. Asking for `output`
    or `both` explicitly derives an output schema from any return annotation."""
    cost_hint: str | None
    """Catalog metadata (this and the four below but `safety_notes`): for operators, never
    sent to the model."""
    latency_hint: str | None
    safety_notes: str | None
    """What people and the model should know before the tool is used (in the model's
    description of the tool too)."""
    label: str | None
    """The display label people read instead of the snake_case name."""
    source: str | None
    transport: Transport
    mime_types: Sequence[str]


_CATALOG_KEYS = (
    "cost_hint",
    "latency_hint",
    "safety_notes",
    "label",
    "source",
    "transport",
    "mime_types",
)
_OUTPUT = ("output", "both")
_KNOWN_OPTIONS = frozenset(ToolOptions.__annotations__) | {"input_schema"}


def _seconds(value: Any) -> Any:
    return value.total_seconds() if isinstance(value, timedelta) else value


def _merge(model: type[Any], base: BaseModel, flat: dict[str, Any], tool: str, what: str) -> Any:
    try:
        return model.model_validate({**base.model_dump(), **flat})
    except PydanticValidationError as exc:
        raise ToolRegistrationError(
            f"tool {tool!r}: invalid {what} options: {exc}", rule="options", tool_name=tool
        ) from None


def build_tool(
    fn: Callable[..., Any],
    options: Mapping[str, Any],
    *,
    name_style: NameStyle = "snake_case",
    max_name_length: int = 64,
) -> RegisteredTool:
    """Check `fn` and `options` and build the registered tool (not yet in a registry).

    Args:
        fn: The tool function.
        options: `ToolOptions` keywords.
        name_style: The registry's naming rule.
        max_name_length: The registry's longest name.

    Raises:
        ToolRegistrationError: with `rule` naming what broke.
    """
    unknown = set(options) - _KNOWN_OPTIONS
    if unknown:
        raise ToolRegistrationError(
            f"unknown tool options: {', '.join(sorted(unknown))}", rule="options"
        )
    if not callable(fn):
        raise ToolRegistrationError(f"{fn!r} is not callable", rule="signature")
    # An explicit name is checked as given: `name=""` is an error, not "use the default".
    name: str = options["name"] if "name" in options else str(getattr(fn, "__name__", ""))
    check_tool_name(name, style=name_style, max_length=max_name_length)
    docstring = parse_docstring(inspect.getdoc(fn))
    description = options.get("description") or docstring.description

    flat_safety: dict[str, Any] = {k: options[k] for k in _SAFETY_KEYS if k in options}
    base_safety = options.get("safety") or Safety()
    if (
        flat_safety.get("read_only", base_safety.read_only)
        and "side_effect" not in flat_safety
        and "side_effect" not in base_safety.model_fields_set
    ):
        flat_safety["side_effect"] = "none"  # a read-only tool's effects reach nothing
    safety: Safety = _merge(Safety, base_safety, flat_safety, name, "safety")

    flat_policy: dict[str, Any] = {k: _seconds(options[k]) for k in _POLICY_KEYS if k in options}
    policy: ExecutionPolicy = _merge(
        ExecutionPolicy, options.get("policy") or ExecutionPolicy(), flat_policy, name, "policy"
    )
    if policy.retry.retry_timeouts is None:
        # Safe default: after a timeout the outcome is unknown, so only a tool that is
        # harmless to repeat is retried; a mutating, non-idempotent one is not.
        policy = policy.model_copy(
            update={
                "retry": policy.retry.model_copy(update={"retry_timeouts": safety.safe_to_repeat})
            }
        )

    approval = options.get("approval", False)
    predicate: ApprovalPredicate | None = None
    if callable(approval):
        mode: Literal["never", "always", "conditional"] = "conditional"
        predicate = approval
    else:
        mode = "always" if approval else "never"

    strict = bool(options.get("strict", False))
    given_schema = options.get("input_schema")
    plan = (
        plan_signature(fn, tool_name=name, docstring=docstring, strict=strict)
        if given_schema is None
        else plan_for_schema(given_schema, tool_name=name, strict=strict)
    )
    output_schema = _output_schema(options.get("output_schema"), plan, name)
    if output_schema is None and given_schema is None and options.get("validate") in _OUTPUT:
        output_schema = output_schema_for(fn, tool_name=name)

    aliases = dict(options.get("aliases") or {})
    for provider, alias in aliases.items():
        check_alias(alias, provider=provider, tool_name=name)

    try:
        spec = ToolSpec(
            name=name,
            description=description,
            input_schema=plan.input_schema,
            output_schema=output_schema,
            examples=tuple(dict(e) for e in options.get("examples", ())),
            tags=tuple(options.get("tags", ())),
            auth_scopes=tuple(options.get("auth_scopes", ())),
            loading=LoadingMode(options.get("loading", LoadingMode.ALWAYS)),
            safety=safety,
            policy=policy,
            approval=mode,
            oauth=options.get("oauth"),
            aliases=aliases,
            strict=strict,
            validation=options.get("validate", "both"),
            **{k: options[k] for k in _CATALOG_KEYS if k in options},
        )
    except (PydanticValidationError, ValueError, TypeError) as exc:
        raise ToolRegistrationError(
            f"tool {name!r}: invalid options: {exc}", rule="options", tool_name=name
        ) from None
    _check_examples(spec)
    summary_function = _approval_summary(options.get("approval_summary"), spec)
    if summary_function is not None:
        spec = spec.model_copy(update={"approval_summary_on_worker": True})
    elif options.get("approval_summary") is not None:
        spec = spec.model_copy(update={"approval_summary": options["approval_summary"]})
    spec = resolve_local(spec, plan)
    tool_class = RegisteredTool if given_schema is None else SchemaTool
    tool = tool_class(
        spec=spec,
        fn=fn,
        plan=plan,
        approval_predicate=predicate,
        visible_to=options.get("visible_to"),
        approval_summary=summary_function,
    )
    return tool


def _approval_summary(option: object, spec: ToolSpec) -> SummaryFunction | None:
    """The summary function, if `option` is one; a template is checked against `spec`.

    Raises:
        ToolRegistrationError: a template the summary language refuses (or one naming an
            argument the tool does not take, or a secret-marked one), or neither text nor
            a function.
    """
    if option is None:
        return None
    if callable(option):
        return option  # type: ignore[return-value]
    if not isinstance(option, str):
        raise ToolRegistrationError(
            f"tool {spec.name!r}: approval_summary must be a template (text) or a function",
            rule="options",
            tool_name=spec.name,
        )
    try:
        check_template(option, spec)
    except SummaryTemplateError as error:
        raise ToolRegistrationError(
            f"tool {spec.name!r}: {error}", rule="options", tool_name=spec.name
        ) from None
    return None


def _output_schema(
    option: Mapping[str, Any] | type[BaseModel] | None, plan: SignaturePlan, name: str
) -> dict[str, Any] | None:
    if option is None:
        return plan.output_schema
    if isinstance(option, type) and issubclass(option, BaseModel):
        return schema_for_model(option, tool_name=name, mode="serialization")
    schema = dict(option)  # type: ignore[arg-type]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ToolRegistrationError(
            f"tool {name!r}: output_schema is not a valid JSON Schema: {exc.message}",
            rule="schema",
            tool_name=name,
        ) from None
    return schema


def _check_examples(spec: ToolSpec) -> None:
    validator = schema_validator(spec.name, spec.input_schema)
    for index, example in enumerate(spec.examples):
        lines = format_schema_errors(validator.iter_errors(example))
        if lines:
            raise ToolRegistrationError(
                f"tool {spec.name!r}: example {index} breaks the input schema: " + "; ".join(lines),
                rule="example",
                tool_name=spec.name,
            )
