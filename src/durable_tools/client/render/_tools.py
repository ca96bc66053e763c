"""Plain-text rendering of tools for the command line: a tool's safety, limits, approval,
its catalog line and its model-visible schema (`durable-tools tools`, `show`, the inbox)."""

from __future__ import annotations

import json
from typing import Any

from durable_tools.client.render._text import terminal_safe
from durable_tools.tools._spec import ToolSpec

__all__ = [
    "approval_label",
    "catalog_json",
    "catalog_line",
    "render_tool",
    "safety_summary",
    "tool_json",
]


def approval_label(spec: ToolSpec) -> str:
    """The tool's own approval rule, as the workflow applies it under the default policy:
    `always` for `approval="always"` or `requires_confirmation` (MCP tools marked
    destructive), else `conditional` or `never`."""
    if spec.approval == "always" or spec.safety.requires_confirmation:
        return "always"
    return str(spec.approval)


def safety_summary(spec: ToolSpec) -> str:
    """A short line: read-only or mutating, idempotent, side effects, approval."""
    s = spec.safety
    parts = ["read-only" if s.read_only else f"mutating ({s.side_effect} effects)"]
    if s.idempotent and not s.read_only:
        parts.append("idempotent")
    for flag, label in (
        (s.networked, "network"),
        (s.filesystem, "filesystem"),
        (s.shell, "shell"),
        (s.spends_money, "spends money"),
    ):
        if flag:
            parts.append(label)
    if s.requires_confirmation:
        parts.append("requires confirmation")
    parts.append(f"approval: {approval_label(spec)}")
    if spec.oauth is not None:
        parts.append(f"oauth: {spec.oauth.provider}")
    if spec.loading != "always":
        parts.append(f"loading: {spec.loading}")
    limits = _limits_label(spec)
    if limits:
        parts.append(f"limits: {limits}")
    return ", ".join(parts)


def catalog_line(spec: ToolSpec) -> str:
    """Catalog metadata in one line: transport, source, cost, latency, MIME types, aliases."""
    parts = [f"transport: {spec.transport}"]
    if spec.policy.local:
        parts.append("activity: local")  # chosen at registration (tools/_auto_local.py)
    for label, value in (
        ("source", spec.source),
        ("cost", spec.cost_hint),
        ("latency", spec.latency_hint),
        ("types", ", ".join(spec.mime_types) or None),
        ("aliases", ", ".join(f"{p}={a}" for p, a in sorted(spec.aliases.items())) or None),
    ):
        if value:
            parts.append(f"{label}: {value}")
    return "; ".join(parts)


def catalog_json(spec: ToolSpec) -> dict[str, Any]:
    """Catalog metadata as JSON."""
    return {
        "transport": spec.transport,
        "source": spec.source,
        "cost_hint": spec.cost_hint,
        "latency_hint": spec.latency_hint,
        "safety_notes": spec.safety_notes,
        "mime_types": list(spec.mime_types),
        "aliases": dict(spec.aliases),
        "validate": spec.validation,
        "local_activity": spec.policy.local is True,
        "examples": list(spec.examples),
    }


def _limits_label(spec: ToolSpec) -> str:
    """`at most 2 at once, 5/s, 10 per run`, or empty for an unlimited tool."""
    p = spec.policy
    labels = [
        f"at most {p.max_concurrent} at once" if p.max_concurrent is not None else "",
        f"{p.rate_limit:g}/s" if p.rate_limit is not None else "",
        f"{p.max_calls_per_run} per run" if p.max_calls_per_run is not None else "",
    ]
    return ", ".join(label for label in labels if label)


def tool_json(spec: ToolSpec) -> dict[str, Any]:
    """A tool as the model sees it, plus its safety and approval rules."""
    return {
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.input_schema,
        "safety": spec.safety.model_dump(mode="json"),
        "approval": approval_label(spec),
        "summary": safety_summary(spec),
        "loading": str(spec.loading),
        "oauth": spec.oauth.model_dump(mode="json") if spec.oauth else None,
        "catalog": catalog_json(spec),
        "limits": spec.policy.model_dump(
            mode="json", include={"max_concurrent", "rate_limit", "max_calls_per_run"}
        ),
    }


def render_tool(spec: ToolSpec) -> str:
    """A tool's name, description, safety summary and parameter schema."""
    schema = json.dumps(spec.input_schema, indent=2, ensure_ascii=True)
    body = "\n".join("    " + line for line in schema.splitlines())
    description = spec.description.strip() or "(no description)"
    notes = f"\n  safety notes: {spec.safety_notes}" if spec.safety_notes else ""
    head = terminal_safe(
        f"{spec.name}\n  {description}\n  [{safety_summary(spec)}]\n  "
        f"[{catalog_line(spec)}]{notes}",
        multiline=True,
    )
    return f"{head}\n  parameters:\n{body}"
