"""What a standing grant binds: the tool's name, input schema and safety metadata as the
person who gave it saw them; grants recorded before that keep their name-only meaning."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from durable_tools import ApprovalPolicy, GrantRequest, Safety, StandingGrant, ToolSpec
from durable_tools.policy._decide import decide
from durable_tools.policy._grants import UNBOUND, ToolBinding, find_grant, grant_covers, make_grant
from durable_tools.tools._validation import safety_digest
from durable_tools.worker import GrantStore
from durable_tools.workflows import SafetyRule

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
PLAIN = ToolSpec(name="query", input_schema=SCHEMA, safety=Safety(read_only=True))


def given(spec: ToolSpec, *, bound: bool = True, grant_id: str = "g1") -> StandingGrant:
    return make_grant(
        GrantRequest(),
        grant_id=grant_id,
        tool=spec.name,
        granted_by="alice",
        now=NOW,
        scope_key="",
        run_id="run-1",
        binding=ToolBinding.of(spec) if bound else UNBOUND,
    )


def changed(**safety: Any) -> ToolSpec:
    return PLAIN.model_copy(update={"safety": PLAIN.safety.model_copy(update=safety)})


@pytest.mark.parametrize(
    "later",
    [
        changed(shell=True),
        changed(filesystem=True),
        changed(networked=True),
        changed(spends_money=True),
        changed(read_only=False),  # mutating now
        changed(workspace_root="/"),
        changed(side_effect="local"),
        PLAIN.model_copy(update={"tags": ("dangerous",)}),
        PLAIN.model_copy(update={"input_schema": {**SCHEMA, "required": ["q"]}}),
    ],
    ids=lambda spec: "changed",
)
def test_a_grant_covers_the_tool_only_as_its_giver_saw_it(later: ToolSpec) -> None:
    grant = given(PLAIN)
    assert grant_covers(grant, "query", {"q": "x"}, NOW, ToolBinding.of(PLAIN))
    assert not grant_covers(grant, "query", {"q": "x"}, NOW, ToolBinding.of(later))


def test_what_safety_rules_never_read_leaves_the_grant_standing() -> None:
    grant = given(PLAIN)
    described = PLAIN.model_copy(update={"description": "Search the index."})
    redacting = changed(redact=("q",), idempotent=True)
    for spec in (described, redacting):
        assert grant_covers(grant, "query", {"q": "x"}, NOW, ToolBinding.of(spec))


def test_a_grant_recorded_before_grants_bound_the_tool_covers_it_by_name() -> None:
    legacy = given(PLAIN, bound=False)
    assert (legacy.tool_schema, legacy.tool_safety) == (None, None)
    for spec in (PLAIN, changed(shell=True)):
        assert grant_covers(legacy, "query", {}, NOW, ToolBinding.of(spec))
    # A lookup that knows no binding (a run from before) finds only such grants.
    assert find_grant([given(PLAIN), legacy], "query", {}, NOW) is legacy


def test_a_forged_or_oversized_digest_never_parses_into_a_grant() -> None:
    grant = given(PLAIN).model_dump()
    with pytest.raises(ValidationError):
        StandingGrant.model_validate({**grant, "tool_schema": "a" * 10_000})
    # A guessed digest of another schema simply covers nothing.
    forged = StandingGrant.model_validate({**grant, "tool_schema": "0" * 24})
    assert not grant_covers(forged, "query", {}, NOW, ToolBinding.of(PLAIN))


def test_a_grant_for_a_plain_tool_does_not_stand_for_it_once_it_runs_shell() -> None:
    policy = ApprovalPolicy(safety_rules=(SafetyRule(shell=True, action="ask"),))
    plain = PLAIN.model_copy(update={"approval": "always"})
    shell = plain.model_copy(update={"safety": plain.safety.model_copy(update={"shell": True})})
    grant = given(plain)
    assert decide(plain, policy, {}, now=NOW, grants=[grant]).layer == "grant:g1"
    assert decide(shell, policy, {}, now=NOW, grants=[grant]).layer == "person"
    assert safety_digest(shell) != safety_digest(plain)


async def test_the_grant_store_finds_the_grant_bound_to_the_tool_of_the_call(
    tmp_path: Path,
) -> None:
    store = GrantStore(tmp_path / "grants.json")
    shell = changed(shell=True)
    for number, spec in enumerate((PLAIN, shell)):
        grant = given(spec, grant_id=f"g{number}").model_copy(update={"identity": "me"})
        await store.save(grant)
    for number, spec in enumerate((PLAIN, shell)):
        found = await store.find("me", "query", {}, NOW, binding=ToolBinding.of(spec))
        assert found is not None and found.grant_id == f"g{number}"
    other = changed(networked=True)
    assert await store.find("me", "query", {}, NOW, binding=ToolBinding.of(other)) is None
    # A run's look-up from older code binds nothing: bound grants never cover it.
    assert await store.find("me", "query", {}, NOW, binding=UNBOUND) is None
    # An operator asking by name sees the first grant for the tool.
    assert (found := await store.find("me", "query", {}, NOW)) and found.grant_id == "g0"


def test_thousands_of_grants_find_the_one_bound_to_the_tool() -> None:
    specs = [PLAIN.model_copy(update={"tags": (f"t{n}",)}) for n in range(2_000)]
    grants = [given(spec, grant_id=f"g{n}") for n, spec in enumerate(specs)]
    for number in (0, 999, 1_999):
        found = find_grant(grants, "query", {}, NOW, binding=ToolBinding.of(specs[number]))
        assert found is not None and found.grant_id == f"g{number}"
