"""The package exports what it means to export, once, and the top level stays Temporal-free.

A public module is a module or package of `durable_tools` with no leading underscore in any
part of its dotted path; its `__all__` is its public API. A package whose `__all__` is empty
only groups private modules by role (`durable_tools.protocol`, `durable_tools.client`,
`durable_tools.workflows.calls`, ...) and is not a public module.

The rule: every public object has exactly one public path, the module whose `__all__` lists
it. What a user's code needs (defining tools, configuring the agent, running a worker,
starting, deciding and reading runs) is exported by the top-level package, and is then in no
other module's `__all__`; the package that defines such a name keeps it importable
(`from durable_tools.tools import ToolRegistry` still works) but neither lists nor documents
it there. Specialised modules (`durable_tools.models`, `.sources`, `.oauth`, ...) export their
own names. Wire records (what the client sends a workflow, what a workflow carries across
continue-as-new) and the plumbing of the tool layer, the OAuth broker and the inbox are in no
`__all__`: users never build or call them.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import pytest

import durable_tools

SOURCE = Path(durable_tools.__file__).parent


def _public_modules() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] == "__main__" or any(part.startswith("_") for part in parts):
            continue
        if path.name == "__init__.py" and "__all__: list[str] = []" in path.read_text():
            continue
        found.append(".".join(parts))
    return found


PUBLIC_MODULES = _public_modules()

EXPECTED_MODULES = [
    "durable_tools",
    "durable_tools.agui",
    "durable_tools.callbacks",
    "durable_tools.cli",
    "durable_tools.codec",
    "durable_tools.codec.server",
    "durable_tools.connection",
    "durable_tools.demo",
    "durable_tools.demo.tools",
    "durable_tools.events",
    "durable_tools.flows",
    "durable_tools.inbox",
    "durable_tools.integrations.openai_agents",
    "durable_tools.integrations.pydantic_ai",
    "durable_tools.messages",
    "durable_tools.models",
    "durable_tools.oauth",
    "durable_tools.plugin",
    "durable_tools.search_attributes",
    "durable_tools.server",
    "durable_tools.sources",
    "durable_tools.streaming",
    "durable_tools.telemetry",
    "durable_tools.testing",
    "durable_tools.tools",
    "durable_tools.worker",
    "durable_tools.workflows",
    "durable_tools.workspace",
]

SAME_NAME_DIFFERENT_THINGS = {
    # Two different classes that happen to share a name; each has one public path.
    "PendingAuthorization": {
        "durable_tools.oauth",  # the broker's stored record (a state store keeps it)
        "durable_tools.workflows",  # a run's status entry (`status().pending_authorizations`)
    },
    "TokenStore": {
        "durable_tools.inbox",  # the inbox's users' bearer tokens file
        "durable_tools.oauth",  # where the OAuth broker keeps users' provider tokens
    },
}


def _exported(module_name: str) -> list[str]:
    return list(importlib.import_module(module_name).__all__)


def test_the_public_modules_are_the_intended_ones() -> None:
    # A new public module is a decision: add it here (or give it a leading underscore).
    assert PUBLIC_MODULES == EXPECTED_MODULES


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_every_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = _exported(name)
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n)) or exported == sorted(
        exported
    ), f"{name}.__all__ is not sorted"
    assert len(exported) == len(set(exported))
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.{attribute} is exported but missing"
        assert not attribute.startswith("_") or attribute == "__version__", (
            f"{name} exports the private name {attribute}"
        )


def test_every_public_name_has_one_public_path() -> None:
    homes: dict[str, set[str]] = defaultdict(set)
    objects: dict[int, set[str]] = defaultdict(set)
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for attribute in _exported(module_name):
            homes[attribute].add(module_name)
            value = getattr(module, attribute)
            if not isinstance(value, (str, int, float, bool, tuple, frozenset)):
                objects[id(value)].add(f"{module_name}.{attribute}")
    twice = {n: m for n, m in homes.items() if len(m) > 1}
    assert twice == SAME_NAME_DIFFERENT_THINGS
    assert [sorted(paths) for paths in objects.values() if len(paths) > 1] == []


ROOT_NAMES = {
    # defining tools
    "ApprovalMode", "ArtifactRef", "Cancelled", "ContentBlock", "Denied", "ExecutionPolicy",
    "Identity", "Injected", "InvalidArguments", "LoadingMode", "NeedsAuthorization",
    "OAuthRequirement", "RetrySpec", "Safety", "SideEffect", "Skip", "ToolContext", "ToolError",
    "ToolExecutionError", "ToolNotFound", "ToolRegistrationError", "ToolRegistry", "ToolResult",
    "ToolSpec", "ToolTimeout",
    # configuring the agent, and what a run returns and reports
    "AgentConfig", "AgentResult", "ApprovalPolicy", "AuthorizationPolicy", "AutoApproval",
    "CodeMode", "CompactionConfig", "ExecutionStrategy", "GrantRequest", "Limits",
    "NotificationConfig", "PendingApproval", "PendingInput", "Price", "RunEvent", "RunStatus",
    "SessionConfig", "SessionReply", "SlackTarget", "StandingGrant", "ToolCallRecord",
    "WebhookTarget", "Message", "ToolCall",
    # running workers
    "build_worker", "connect", "DurableToolsPlugin",
    # starting, deciding and reading runs
    "AgentRun", "DurableTools", "PendingRequest", "RunSummary", "ScheduleSummary", "SentMessage",
    "ToolProgress", "answer_input", "progress_in", "DecisionError", "AlreadyDecided",
    "AmbiguousRequest", "DecisionRecorded", "DecisionTimedOut", "InputAnswerRejected",
    "MalformedDecision", "NotADecider", "NothingPending", "RejectedByRun", "RunEnded",
    "RunNotFound", "RunUnreadable", "SessionRefused", "StaleRequest", "WorkerUnavailable",
}  # fmt: skip

NOT_PUBLIC = {
    # what the client sends a run, and what a run carries or answers internally; each is
    # built by `AgentRun`/the workflow, never by a user's code
    "AuthorizationCompleted", "BatchDecision", "BatchItem", "CarriedState", "EventsPage",
    "GrantRevocation", "PolicyChange", "SessionView", "Steer", "StreamBatch", "StreamInput",
    # the tool layer's own plumbing (the activity validates, formats and classifies)
    "abridge_arguments", "classify_exception", "error_message_for_model", "error_outcome",
    "parse_arguments", "parse_retry_after", "redact_arguments", "to_tool_result",
    "validate_arguments", "validate_output",
    # the OAuth broker's PKCE and state plumbing, the inbox's token hashing and body limit
    "code_challenge", "new_code_verifier", "new_state", "body_limit", "decider_for", "hash_token",
}  # fmt: skip


def test_the_top_level_exports_what_a_users_code_needs() -> None:
    assert set(durable_tools.__all__) == ROOT_NAMES | {"__version__"}
    assert durable_tools.__version__
    assert set(dir(durable_tools)) >= ROOT_NAMES


def test_no_wire_record_or_plumbing_is_public() -> None:
    public = {name for module in PUBLIC_MODULES for name in _exported(module)}
    assert sorted(NOT_PUBLIC & public) == []
    api = (SOURCE.parents[1] / "docs" / "api.md").read_text()
    assert [name for name in sorted(NOT_PUBLIC) if f"`{name}`" in api] == []


def test_the_old_paths_of_top_level_names_still_import_the_same_object() -> None:
    # `from durable_tools.tools import ToolRegistry` was the one path before: it keeps
    # working, it is just no longer listed (or documented) there.
    for name in sorted(ROOT_NAMES):
        home = durable_tools._EXPORTS[name]
        assert name not in _exported(home), f"{home} still lists {name}"
        assert getattr(importlib.import_module(home), name) is getattr(durable_tools, name)


def test_names_the_top_level_dropped_warn_and_name_the_one_path() -> None:
    from durable_tools.messages import ModelRequest

    with pytest.warns(DeprecationWarning, match="import it from durable_tools.messages"):
        assert durable_tools.ModelRequest is ModelRequest  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert durable_tools.ToolRegistry is not None  # a real export: no warning
        with pytest.raises(AttributeError, match="no attribute 'format_result'"):
            durable_tools.format_result  # type: ignore[attr-defined]  # noqa: B018


def test_every_public_class_and_function_has_its_own_docstring() -> None:
    # The API reference renders each module's `__all__` (tests/test_docs_site.py); a name
    # without a docstring would be listed with nothing to say.
    missing = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for attribute in _exported(module_name):
            value = getattr(module, attribute)
            if isinstance(value, type) or inspect.isfunction(value):
                doc = value.__dict__.get("__doc__") if isinstance(value, type) else value.__doc__
                if not (doc or "").strip():
                    missing.append(f"{module_name}.{attribute}")
    assert missing == []


def test_the_input_answer_api_is_public() -> None:
    from durable_tools import InputAnswerRejected, PendingInput, answer_input

    assert callable(answer_input)
    assert issubclass(InputAnswerRejected, ValueError)
    assert "call_id" in PendingInput.model_fields


def test_top_level_import_does_not_load_temporal() -> None:
    code = "import sys, durable_tools; print(any(m.startswith('temporalio') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
