"""The examples run as written (the docs include them), against the session's dev server."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_tools.oauth import load_providers

ROOT = Path(__file__).resolve().parents[1]


# Runs an example as `python examples/NAME` would, and says on stdout whether the interpreter
# was torn down at exit: an atexit hook runs only then.
_RUN_WITH_TEARDOWN_PROBE = """
import atexit, runpy, sys
atexit.register(lambda: print("interpreter teardown: ran", flush=True))
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def run_example(env: WorkflowEnvironment, tmp_path: Path, name: str) -> dict[str, str]:
    """Run `examples/NAME` against the session's server; its `key: value` output lines."""
    environment = {
        **os.environ,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "DURABLE_TOOLS_ARTIFACTS": str(tmp_path),
        "PYTHONFAULTHANDLER": "1",  # a crash shows every thread's Python stack
    }
    done = subprocess.run(
        [sys.executable, "-c", _RUN_WITH_TEARDOWN_PROBE, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, f"exit code {done.returncode}\n{done.stdout}\n{done.stderr}"
    return dict(line.split(": ", 1) for line in done.stdout.strip().splitlines())


def test_durable_run_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "durable_run.py")
    assert lines["waiting for approval of"] == "pay"
    assert lines["status"] == "completed"
    assert lines["answer"] == "Paid 5.00 from acc-1."
    # The Temporal SDK's Rust threads outlive the event loop; a finalizing interpreter can
    # then crash (SIGSEGV, temporalio/sdk-python#300): the example leaves without teardown.
    assert "interpreter teardown" not in lines


def test_custom_model_adapter_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "custom_model_adapter.py")
    assert lines == {"status": "completed", "answer": "The sum is 42."}  # and no teardown


def test_the_docs_show_the_examples_as_they_are() -> None:
    # The pages include the files whole (pymdownx.snippets), so the site shows what these
    # tests run; the README, read on GitHub where includes stay raw, links to them instead.
    readme = (ROOT / "README.md").read_text()
    for page, example in (("tools.md", "define_a_tool.py"), ("running.md", "durable_run.py")):
        assert f'--8<-- "examples/{example}"' in (ROOT / "docs" / page).read_text()
        assert f"(examples/{example})" in readme, f"README does not link to examples/{example}"


def test_define_a_tool_example(tmp_path: Path) -> None:
    lines = run_example_plain("define_a_tool.py")
    assert lines["retry timeouts"] == "True"
    assert lines["result"] == '{"city": "Oslo", "temperature": 21, "units": "metric"}'
    # The injected key and the context never reach the schema the model sees.
    assert "api_key" not in lines["schema"] and "ctx" not in lines["schema"]


def run_example_plain(name: str) -> dict[str, str]:
    """Run `examples/NAME`, which needs no server; its `key: value` output lines."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"exit code {done.returncode}\n{done.stdout}\n{done.stderr}"
    return dict(line.split(": ", 1) for line in done.stdout.strip().splitlines())


# ------------------------------------------------------------------- examples/myapp

EXAMPLES = ROOT / "examples"
PROGRAM = str(Path(sys.executable).parent / "durable-tools")


def myapp_environment(env: WorkflowEnvironment, tmp_path: Path) -> dict[str, str]:
    """What a newcomer's shell holds, pointed at the session's server and a fresh queue."""
    return {
        **os.environ,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": env.client.namespace,
        "DURABLE_TOOLS_TASK_QUEUE": f"test-{uuid.uuid4()}",
        "DURABLE_TOOLS_HOME": str(tmp_path / "home"),
        "DURABLE_TOOLS_ARTIFACTS": str(tmp_path / "artifacts"),
    }


def durable_tools(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`cd examples && durable-tools ARGS`, as the README says; must succeed."""
    done = subprocess.run(
        [PROGRAM, *args],
        cwd=EXAMPLES,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, (
        f"durable-tools {args}: {done.returncode}\n{done.stdout}{done.stderr}"
    )
    return done


@contextlib.contextmanager
def myapp_worker(environment: dict[str, str]) -> Iterator[str]:
    """`cd examples && durable-tools worker --tools myapp.tools` until the block ends;
    yields the worker's banner."""
    worker = subprocess.Popen(
        [PROGRAM, "worker", "--tools", "myapp.tools", "--graceful-shutdown", "5"],
        cwd=EXAMPLES,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert worker.stdout is not None
    try:
        banner = [worker.stdout.readline() for _ in range(4)]
        assert banner[0].startswith("worker on"), "".join(banner) + worker.stdout.read()
        yield "".join(banner)
    finally:
        worker.terminate()
        output, _ = worker.communicate(timeout=30)
    assert worker.returncode == 0, output


class _Billing(http.server.BaseHTTPRequestHandler):
    """The billing API of myapp/openapi.json: one invoice, for the bearer `s3cret`."""

    def do_GET(self) -> None:
        authorized = self.headers.get("Authorization") == "Bearer s3cret"
        found = self.path == "/v1/invoices/inv-1"
        status = 200 if authorized and found else 401 if not authorized else 404
        invoice = {"invoice_id": "inv-1", "account": "acc-1", "amount_cents": 500, "status": "paid"}
        body = json.dumps(invoice if status == 200 else {"error": status}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_myapp_tools_are_what_the_readme_says(env: WorkflowEnvironment, tmp_path: Path) -> None:
    done = durable_tools(
        myapp_environment(env, tmp_path), "tools", "--tools", "myapp.tools", "--json"
    )
    tools = {tool["name"]: tool for tool in json.loads(done.stdout)}
    assert set(tools) == {
        "get_balance",
        "list_transactions",
        "pay",
        "list_my_repositories",
        "fx__convert",  # from myapp/mcp_server.py
        "billing_list_invoices",  # from myapp/openapi.json
        "billing_get_invoice",
        "billing_refund_invoice",
    }
    approval = {name: tool["approval"] for name, tool in tools.items()}
    assert approval["pay"] == approval["billing_refund_invoice"] == "always"
    assert approval["get_balance"] == approval["fx__convert"] == "never"
    # The worker's bearer secret is never an argument the model sees or sets.
    assert "authorization" not in json.dumps(tools["billing_get_invoice"]).lower()


def test_myapp_quickstart_runs_as_written(env: WorkflowEnvironment, tmp_path: Path) -> None:
    """docs/quickstart.md: a worker, a run that waits for approval, `pending`, `approve`."""
    environment = myapp_environment(env, tmp_path)
    billing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Billing)
    threading.Thread(target=billing.serve_forever, daemon=True).start()
    environment["MYAPP_BILLING_URL"] = f"http://127.0.0.1:{billing.server_address[1]}/v1"
    environment["DURABLE_TOOLS_SECRET_BILLING_TOKEN"] = "s3cret"
    try:
        with myapp_worker(environment) as banner:
            assert "fx__convert" in banner and "billing_get_invoice" in banner
            quickstart_run = ["run", "Pay 5.00 from acc-1", "--model", "scripted:myapp/steps.json"]
            run = subprocess.Popen(
                [PROGRAM, *quickstart_run, "--wait", "--json"],
                cwd=EXAMPLES,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                assert run.stderr is not None
                started = run.stderr.readline()  # with --json, progress goes to stderr
                assert started.startswith("started run "), started
                run_id = started.split()[2]
                pending = _wait_for_pending(environment, run_id)
                assert (pending["tool"], pending["call_id"]) == ("pay", "p1")
                durable_tools(
                    environment,
                    *("approve", run_id, "p1", "--hash", pending["arguments_hash"]),
                    *("--as", "alice", "--reason", "checked"),
                )
                out, err = run.communicate(timeout=60)
            finally:
                run.kill()
            assert run.returncode == 0, out + err
            outcome = json.loads(out)
            assert outcome["final_answer"] == "Paid 5.00 USD (4.60 EUR) from acc-1."
            shown = json.loads(durable_tools(environment, "show", run_id, "--json").stdout)
            results = {call["tool"]: call["result"] for call in shown["timeline"]}
            assert results["fx__convert"] == "460"  # the MCP server converted 500 US cents
            assert results["pay"].startswith("paid 500 from acc-1")

            # The OpenAPI tools call the billing API with the worker's secret.
            script = tmp_path / "billing.json"
            call = {"id": "i1", "name": "billing_get_invoice", "arguments": {"invoice_id": "inv-1"}}
            script.write_text(json.dumps({"steps": [{"tool_calls": [call]}, {"text": "ok"}]}))
            done = durable_tools(
                environment, "run", "inv-1?", "--model", f"scripted:{script}", "--wait", "--json"
            )
            run_id = json.loads(done.stdout)["run_id"]
            shown = json.loads(durable_tools(environment, "show", run_id, "--json").stdout)
            [record] = shown["timeline"]
            assert json.loads(record["result"])["status"] == "paid", record
    finally:
        billing.shutdown()


def _wait_for_pending(environment: dict[str, str], run_id: str) -> dict[str, Any]:
    """The first approval request of the run that `durable-tools pending` lists (the
    listing comes from Temporal's visibility store, which catches up within a moment)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = json.loads(durable_tools(environment, "pending", "--json").stdout)
        for entry in listed:
            if entry["run_id"] == run_id and entry.get("approvals"):
                return dict(entry["approvals"][0])
    raise AssertionError(f"run {run_id} listed no approval request within 60 s")


def test_embedding_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "embedding.py")
    assert lines == {
        "child agent": "The grinder arrived damaged.",
        "embedded agent": "Refunded 25.99.",
    }


def test_frameworks_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "frameworks.py")
    assert lines == {
        "plain workflow": "paid 4200 on INV-1",
        "pydantic ai agent": "Done: paid 990 on INV-7",
    }


def test_openai_agents_example(env: WorkflowEnvironment, tmp_path: Path) -> None:
    lines = run_example(env, tmp_path, "openai_agents.py")
    assert lines == {"openai agents agent": "Done: paid 120 on INV-9"}


def test_myapp_providers_file_serves_its_oauth_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    from myapp.tools import registry  # attaches the MCP server: as the worker would

    providers = load_providers(EXAMPLES / "myapp" / "providers.toml")
    needs = registry.get("list_my_repositories").spec.oauth
    assert needs is not None and needs.provider in providers
    # The secret is named, never written down: the file holds no client secret.
    assert providers.get(needs.provider).client_secret_env == "GITHUB_CLIENT_SECRET"
