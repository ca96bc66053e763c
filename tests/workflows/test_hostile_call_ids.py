"""A call id is the model's text: no surface may let it act as markup or a command.

The model names its tool calls, and a prompt-injected model names them as it likes. Every
surface that shows a pending call quotes its id: Slack's message (mrkdwn, where `<url|label>`
is a link and `<!channel>` pings everyone), the Temporal UI's details (markdown, where a
blank line ends a code span's paragraph), and the command line (a terminal, where an
escape sequence can plant a hyperlink). Tested on a real run with a real Slack receiver.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools.client import DurableTools
from durable_tools.tools import ToolRegistry
from durable_tools.workflows import (
    AgentConfig,
    ApprovalPolicy,
    NotificationConfig,
    SlackTarget,
)
from support import answer, calls, running_worker, wait_for, write_script
from webhook_support import webhook_receiver

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

LINK = "<https://evil.example|Open the inbox>"
HOSTILE = (
    f"c1> <!channel> {LINK}\n\n[Approve here](https://evil.example)\n\n"
    "\x1b]8;;https://evil.example\x07docs\x1b]8;;\x07"
)
"""A call id planting a Slack link and mention, a markdown link on a line of its own, and
a terminal hyperlink."""


def pay_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    return registry


async def test_a_call_id_is_text_on_every_surface(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    with webhook_receiver() as receiver:
        async with running_worker(client, pay_registry(), task_queue):
            config = AgentConfig(
                name="payer",
                model=write_script(
                    tmp_path, [calls((HOSTILE, "pay", {"amount": 5})), answer("ok")]
                ),
                approval=ApprovalPolicy(timeout_seconds=3600),
                notifications=NotificationConfig(
                    slack=(
                        SlackTarget(url=receiver.url + "/slack", events=("approval.requested",)),
                    )
                ),
            )
            run = await DurableTools(client, task_queue).start("pay", config=config)
            status = await wait_for(run, lambda s: bool(s.pending_approvals))
            assert status.pending_approvals[0].call_id == HOSTILE
            slack = json.dumps(await receiver.slack_message())  # the text and the blocks
            assert "<https://evil.example|" not in slack and "<!channel>" not in slack
            assert "&lt;https://evil.example|Open the inbox&gt;" in slack
            metadata = await run.handle.query(
                "__temporal_workflow_metadata", result_type=WorkflowMetadata
            )
            details = metadata.current_details
            # The call id stays on its line, in its code span: no paragraph of its own.
            assert "\n[Approve here]" not in details and "\n\n" not in details
            [line] = [x for x in details.splitlines() if "waiting for approval" in x]
            assert "[Approve here](https://evil.example)" in line
            code, listed, err = await cli(capsys, "pending")
            assert code == 0, err
            assert "\x1b" not in listed and "\x07" not in listed
            await run.cancel("test over")
