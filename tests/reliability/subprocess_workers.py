"""Starting, killing and reading worker processes (tests/reliability/worker_proc.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("worker_proc.py")


class WorkerProcess:
    """One worker process; its stderr goes to a file the test can scan."""

    def __init__(
        self,
        address: str,
        task_queue: str,
        work: Path,
        *,
        env: dict[str, str] | None = None,
        script: Path = WORKER,
    ) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.stderr_path = work / f"worker-{time.monotonic_ns()}.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, str(script), address, task_queue, str(work)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, **(env or {})},
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    async def ready(self, timeout: float = 30) -> None:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), timeout)
        if line.strip() != b"ready":
            raise AssertionError(f"worker did not start: {self.stderr()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye to the server."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._stderr.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._stderr.close()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def wait_until(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)
