"""The JSON log format: fields from temporalio's extras and from the activity log context."""

from __future__ import annotations

import io
import json
import logging

import pytest

from durable_tools.telemetry import JsonFormatter, configure_logging
from durable_tools.telemetry._logcontext import log_context


def _format(record: logging.LogRecord) -> dict[str, object]:
    parsed: dict[str, object] = json.loads(JsonFormatter().format(record))
    return parsed


def test_a_workflow_record_names_its_run() -> None:
    record = logging.LogRecord(
        "durable_tools", logging.WARNING, __file__, 1, "slow %s", ("x",), None
    )
    record.temporal_workflow = {"workflow_id": "run-1", "run_id": "r-9", "workflow_type": "Agent"}
    entry = _format(record)
    assert entry["message"] == "slow x" and entry["level"] == "WARNING"
    assert (entry["run_id"], entry["temporal_run_id"], entry["workflow"]) == (
        "run-1",
        "r-9",
        "Agent",
    )


def test_an_activity_record_carries_the_calls_context() -> None:
    token = log_context.set({"run_id": "run-2", "call_id": "c7", "tool": "charge"})
    try:
        record = logging.LogRecord("shop", logging.INFO, __file__, 1, "hi", None, None)
        entry = _format(record)
    finally:
        log_context.reset(token)
    assert (entry["run_id"], entry["call_id"], entry["tool"]) == ("run-2", "c7", "charge")
    outside = _format(logging.LogRecord("shop", logging.INFO, __file__, 1, "hi", None, None))
    assert "call_id" not in outside


def test_configure_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DURABLE_TOOLS_LOG_FORMAT", raising=False)
    assert configure_logging() is False  # text: the process's logging is left alone
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        configure_logging("xml")
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    monkeypatch.setenv("DURABLE_TOOLS_LOG_FORMAT", "json")
    stream = io.StringIO()
    try:
        assert configure_logging(stream=stream) is True
        logging.getLogger("shop").info("one line")
    finally:
        root.handlers, root.level = saved[0], saved[1]
    assert json.loads(stream.getvalue())["message"] == "one line"
