"""One safety rule in a run's policy, on the dev server: the workspace's shell tool and a
tool that writes outside the workspace wait for a person; reads and writes inside run."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from durable_tools import AgentConfig, ApprovalPolicy, DurableTools, RunStatus, ToolRegistry
from durable_tools.workflows import SafetyRule
from durable_tools.workspace import register_workspace_tools
from support import answer, calls, running_worker, wait_for, write_script


def pending_ids(snapshot: object) -> set[str]:
    return {p.call_id for p in snapshot.pending_approvals}  # type: ignore[attr-defined]


async def test_one_safety_rule_holds_a_shell_and_an_outside_write_and_lets_a_read_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "plan.md").write_text("ship it\n")
    outside = tmp_path / "report.txt"
    registry = ToolRegistry()
    # No approval of their own: whatever waits here waits because of the policy's rule.
    register_workspace_tools(registry, root, approval_for_writes=False, approval_for_commands=False)

    @registry.tool(filesystem=True, side_effect="internal")
    def save_report(text: str) -> str:
        """Save a report next to the workspace."""
        outside.write_text(text)
        return "saved"

    rule = SafetyRule(shell=True, writes_outside_workspace=True, side_effects=("irreversible",))
    config = AgentConfig(
        model=write_script(
            tmp_path,
            [
                calls(
                    ("r1", "read_file", {"path": "plan.md"}),
                    ("w1", "write_file", {"path": "notes.md", "content": "inside\n"}),
                ),
                calls(("c1", "run_command", {"command": ["true"]})),
                calls(("s1", "save_report", {"text": "outside"})),
                answer("done"),
            ],
        ),
        approval=ApprovalPolicy(safety_rules=(rule,)),
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", config=config)
        snapshot = await wait_for(run, lambda s: "c1" in pending_ids(s))
        assert snapshot.status == RunStatus.AWAITING_APPROVAL
        # The read and the write inside the root ran without anyone asked.
        assert (root / "notes.md").read_text() == "inside\n"
        (waiting,) = snapshot.pending_approvals
        assert waiting.tool == "run_command"
        assert await run.approve("c1", decider="alice") == "approved"
        snapshot = await wait_for(run, lambda s: "s1" in pending_ids(s))
        assert not outside.exists()  # nothing written before the decision
        assert await run.deny("s1", decider="alice", reason="not there") == "denied"
        result = await run.result()
        layers = {r.call_id: r.policy_layer for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    assert not outside.exists()
    assert layers["c1"] == layers["s1"] == "person"
    assert layers["r1"] is None and layers["w1"] is None  # no layer decided: nobody asked
