"""The handler prefix of an embedded agent loop on its way to the OAuth callback: the
preflight activity passes it to the broker only when there is one, refuses brokers that
cannot keep it and prefixes that cannot be handler names; records stored before it read
as an agent workflow's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_tools import Identity, OAuthRequirement, ToolRegistry
from durable_tools._activities import ToolRuntime, core_activities
from durable_tools._activities._types import PreflightRequest, PreflightResult
from durable_tools.oauth import PendingAuthorization
from durable_tools.oauth._broker import authorization_signal


class OlderBroker:
    """A broker written before embedded loops: its link method takes no handler_prefix."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []

    async def grant_ref(self, identity: Identity, requirement: OAuthRequirement) -> str | None:
        return None

    async def authorization_url(
        self, identity: Identity, requirement: OAuthRequirement, workflow_id: str, call_id: str
    ) -> str:
        self.started.append((workflow_id, call_id))
        return "https://provider.example/authorize?state=s"

    async def access_token(self, identity: Identity, requirement: OAuthRequirement) -> str:
        raise AssertionError("not called by the preflight")


class PrefixBroker(OlderBroker):
    """A broker that keeps the run's handler prefix for its callback."""

    def __init__(self) -> None:
        super().__init__()
        self.prefixes: list[str] = []

    async def authorization_url(  # type: ignore[override]
        self,
        identity: Identity,
        requirement: OAuthRequirement,
        workflow_id: str,
        call_id: str,
        *,
        handler_prefix: str = "",
    ) -> str:
        self.prefixes.append(handler_prefix)
        return await super().authorization_url(identity, requirement, workflow_id, call_id)


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True, oauth=OAuthRequirement(provider="fake", scopes=("read",)))
    def read_calendar(day: str) -> str:
        """Read the calendar."""
        return day

    return tools


async def preflight(broker: Any, prefix: str) -> PreflightResult:
    [activity] = [
        a
        for a in core_activities(ToolRuntime(registry(), oauth=broker))
        if a.__name__ == "preflight"
    ]
    request = PreflightRequest(
        call_id="c1",
        tool_name="read_calendar",
        arguments={"day": "friday"},
        workflow_id="host-1",
        identity=Identity(user="alice"),
        handler_prefix=prefix,
    )
    result: PreflightResult = await ActivityEnvironment().run(activity, request)
    return result


async def test_an_older_broker_still_serves_agent_workflows() -> None:
    broker = OlderBroker()
    result = await preflight(broker, "")
    assert result.authorization_url and broker.started == [("host-1", "c1")]


async def test_the_broker_is_given_the_embedded_loops_prefix() -> None:
    broker = PrefixBroker()
    await preflight(broker, "agent_")
    await preflight(broker, "")
    assert broker.prefixes == ["agent_", ""]


async def test_an_older_broker_refuses_an_embedded_loop_at_once() -> None:
    broker = OlderBroker()
    with pytest.raises(ApplicationError) as refused:
        await preflight(broker, "agent_")
    assert refused.value.type == "OAuthBrokerTooOld" and refused.value.non_retryable
    assert "takes no handler_prefix" in refused.value.message
    assert broker.started == []  # no authorization was started that nobody could finish


@pytest.mark.parametrize("prefix", ["a b", "agent_\n", "\uff41gent_", "x" * 65, "a\x00"])
async def test_a_prefix_that_is_no_handler_name_is_refused(prefix: str) -> None:
    broker = PrefixBroker()
    with pytest.raises(ApplicationError) as refused:
        await preflight(broker, prefix)
    assert refused.value.type == "InvalidHandlerPrefix" and refused.value.non_retryable
    assert broker.prefixes == []
    with pytest.raises(ValueError):  # nor would a tampered record name a signal
        authorization_signal(prefix)


def test_the_signal_names_the_prefixed_handler() -> None:
    assert authorization_signal("") == "authorization_completed"
    assert authorization_signal("agent_") == "agent_authorization_completed"


def test_a_record_stored_before_the_prefix_reads_as_an_agent_workflows() -> None:
    now = datetime.now(UTC)
    stored = {
        "state": "s",
        "provider": "fake",
        "user": "alice",
        "scopes": ["read"],
        "workflow_id": "wf-1",
        "call_id": "c1",
        "redirect_uri": "http://127.0.0.1/cb",
        "code_verifier": "v" * 43,
        "created_at": now.isoformat(),
        "expires_at": now.isoformat(),
    }
    assert PendingAuthorization.model_validate(stored).handler_prefix == ""
