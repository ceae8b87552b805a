"""``patchstream up``: start the embedded stack as supervised child processes.

Order: Tansu, FalkorDB, Milvus Lite (each waited for), topics, then the parse workers and
the two sinks. A crashed child is restarted with backoff; Ctrl-C or SIGTERM stops every
child in reverse order.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from patchstream.bus.topics import ensure_topics
from patchstream.config.settings import Settings
from patchstream.config.stack_addresses import BACKING_HOST, milvus_socket_path
from patchstream.embedded.broker_recycle import BrokerRecycler
from patchstream.embedded.child_settings import (
    child_environment,
    settings_environment,
    with_embedded_addresses,
)
from patchstream.embedded.data_dir_lock import DataDirLock
from patchstream.embedded.lifetime import with_parent_lifetime
from patchstream.embedded.outbox_relay import OutboxTender
from patchstream.embedded.priority import lower_priority
from patchstream.embedded.services import (
    Service,
    ServiceError,
    ensure_port_free,
    free_port,
    port_is_open,
    start_falkordb,
    start_milvus_lite,
    start_tansu,
)
from patchstream.embedded.stall_watch import TIER_SERVICES, StallTender, read_lags
from patchstream.system.procfs import rss_mib

log = logging.getLogger("patchstream.up")
_MAX_BACKOFF_S = 30.0
VECTOR_SINK = TIER_SERVICES["vector"]


# glibc gives each thread that allocates an arena of its own; the services are Python
# processes with a few threads each, and capping arenas at two cut the stack's summed peak
# at scipy's cold index by 3% (3,008 -> 2,921 MiB; parse workers 429 -> 374-394) at no cost
# in time (bench/pipeline.py --corpus medium). The caller's environment still wins.
CHILD_DEFAULTS = {"MALLOC_ARENA_MAX": "2"}


@dataclass
class Worker:
    name: str
    argv: list[str]
    log_path: Path
    port: int | None = None
    service: str = ""
    metrics_port: int | None = None
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0
    nice: int = 0

    def start(self, env: dict[str, str]) -> None:
        env = child_environment(env, self.service)
        if self.metrics_port is not None:  # this child's own /metrics port
            section = json.loads(env.get("PATCHSTREAM_METRICS", "{}"))
            env = {**env, "PATCHSTREAM_METRICS": json.dumps({**section, "port": self.metrics_port})}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log_file:
            # SIGKILL when `up` dies: a worker's graceful stop waits on the broker, which
            # is dying too (a parse worker stayed up for minutes); at-least-once delivery
            # makes a hard stop safe. Services keep SIGTERM (FalkorDB fsyncs its log).
            self.process = subprocess.Popen(
                with_parent_lifetime(self.argv, signal.SIGKILL), env=env, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        if self.nice:
            lower_priority(self.process.pid, self.nice)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 15.0) -> None:
        self.terminate()
        self.wait_or_kill(timeout)

    def terminate(self) -> None:
        if self.process is not None and self.alive():
            self.process.send_signal(signal.SIGTERM)

    def wait_or_kill(self, timeout: float = 15.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)


class Supervisor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.data_dir = Path(settings.embedded.data_dir).resolve()
        self.lock = DataDirLock(self.data_dir)  # one stack per data dir
        self.services: list[Service] = []
        self.workers: list[Worker] = []
        self.stopping = False
        self.outbox = OutboxTender(settings)  # replays after a restart, compacts between
        self.reconciler: subprocess.Popen[bytes] | None = None
        self.next_reconcile = time.monotonic() + settings.embedded.reconcile_interval_s
        self.stalls = StallTender(settings.embedded.consumer_stall_s)
        self.recycler = BrokerRecycler(settings.embedded.broker_recycle_mb)
        # The vector sink waits for the start's audit of the vector tier: a killed Milvus
        # Lite can come back without chunk rows its file records still list, and the sink
        # applying an index meanwhile made that index look complete (the restart soak's
        # rounds 38 and 44 of 2026-12-03, with Milvus too loaded to answer the first audit).
        self.vector_sink_held = False

    def start_services(self) -> None:
        embedded = self.settings.embedded
        for name, port in (("tansu", embedded.kafka_port), ("falkordb", embedded.falkordb_port),
                           ("milvus", embedded.milvus_port)):  # fmt: skip
            self.services.append(self._start_service(name, port))

    def _start_service(self, name: str, port: int) -> Service:
        """One backing service, retried with backoff: a store that fails to start is not a
        failed stack until it failed ``service_start_attempts`` times, each with its reason."""
        attempts = self.settings.embedded.service_start_attempts
        for attempt in range(1, attempts + 1):
            try:
                return self._start_service_once(name, port)
            except ServiceError as exc:
                if attempt == attempts or self.stopping:
                    raise
                wait_s = min(_MAX_BACKOFF_S, 2.0 ** (attempt - 1))
                log.warning("event=service_start_failed service=%s attempt=%d retry_in_s=%.0f "
                            "reason=%r", name, attempt, wait_s, str(exc)[-800:])  # fmt: skip
                time.sleep(wait_s)
        raise AssertionError("unreachable")

    def _start_service_once(self, name: str, port: int) -> Service:
        """One backing service, on loopback, as at first start and at every restart."""
        data = self.data_dir / name
        embedded = self.settings.embedded
        wait_s = embedded.port_release_wait_s
        if name == "tansu":
            return start_tansu(data, port, BACKING_HOST, port_wait_s=wait_s)
        if name == "milvus":
            socket_path = milvus_socket_path(self.data_dir) if embedded.milvus_socket else None
            return start_milvus_lite(data, port, BACKING_HOST, nice=embedded.vector_nice,
                                     socket_path=socket_path, port_wait_s=wait_s)  # fmt: skip
        graph = self.settings.graph
        password = graph.falkordb_password.get_secret_value() if graph.falkordb_password else None
        return start_falkordb(data, port, BACKING_HOST, password, graph.query_timeout_ms,
                              port_wait_s=wait_s)  # fmt: skip

    def worker_specs(self) -> list[Worker]:
        python = sys.executable
        logs = self.data_dir / "logs"
        specs = [
            Worker(f"parse-{i}", [python, "-m", "patchstream.cli.main", "worker"],
                   logs / f"parse-{i}.log", service="parse")
            for i in range(self.settings.embedded.parse_workers)
        ]  # fmt: skip
        for sink in ("graph", "vector"):
            nice = self.settings.embedded.vector_nice if sink == "vector" else 0
            specs.append(
                Worker(f"{sink}-sink", [python, "-m", "patchstream.cli.main", "sink", sink],
                       logs / f"{sink}-sink.log", service=f"{sink}-sink", nice=nice)
            )  # fmt: skip
        first = self.settings.embedded.metrics_port
        for offset, spec in enumerate(specs):
            spec.metrics_port = first + offset if first else free_port()
        specs.append(
            Worker("query", [python, "-m", "patchstream.cli.main", "query-service"],
                   logs / "query.log", port=self.settings.query.port, service="query")
        )  # fmt: skip
        specs.append(
            Worker("gateway", [python, "-m", "patchstream.cli.main", "gateway"],
                   logs / "gateway.log", port=self.settings.gateway.port, service="gateway")
        )  # fmt: skip
        return specs

    def metrics_targets(self) -> list[dict[str, object]]:
        """Every child's /metrics address, in Prometheus's file_sd format."""
        return [
            {
                "targets": [f"{self._metrics_host(worker)}:{worker.metrics_port or worker.port}"],
                "labels": {"service": worker.service, "process": worker.name},
            }
            for worker in self.workers
        ]

    def _metrics_host(self, worker: Worker) -> str:
        """HTTP services serve /metrics on their own bind; workers and sinks on metrics.host."""
        host = self.settings.embedded.host if worker.port else self.settings.metrics.host
        return "127.0.0.1" if host in ("0.0.0.0", "::") else host

    def write_metrics_targets(self) -> Path:
        """``<data_dir>/prometheus/targets.json``: point a Prometheus file_sd_config at it."""
        path = self.data_dir / "prometheus" / "targets.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.metrics_targets(), indent=2) + "\n")
        return path

    def environment(self) -> dict[str, str]:
        sections = settings_environment(self.settings)
        # The sections carry every resolved setting; inherited PATCHSTREAM_* variables would
        # fight them (or carry secrets to a child that must not have them): drop them all.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
        return {**CHILD_DEFAULTS, **inherited, **sections}

    def start(self) -> None:
        self.lock.acquire()
        self.settings = with_embedded_addresses(self.settings)
        self._purge_withheld_content()
        self.start_services()
        env = self.environment()
        asyncio.run(ensure_topics(self.settings.kafka))
        self.outbox.settings = self.settings
        self.outbox.vectors_restarted()
        self.workers = self.worker_specs()
        # before the sinks start: nothing writes while the vector tier is compared
        self.vector_sink_held = not self._audited_at_start()
        for worker in self.workers:
            if worker.service == VECTOR_SINK and self.vector_sink_held:
                continue  # started by the check that audits
            for port in (worker.port, worker.metrics_port):
                if port is not None:  # a previous run's dying child may still hold it
                    ensure_port_free(worker.name, self.settings.query.host, port,
                                     self.settings.embedded.port_release_wait_s)  # fmt: skip
            worker.start(env)
        self.write_metrics_targets()
        # A fresh broker holds nothing: whatever the outbox kept (the previous `up` was
        # killed, or its broker died with it) is republished at the first check.
        for worker in self.workers:  # the HTTP service is ready when it listens
            if worker.port is not None:
                try:
                    self._wait_for_port(worker)
                except ServiceError as exc:  # a store slow to answer its first call, say:
                    # the checks restart it with backoff, as any crashed child; `up` goes on
                    log.warning("event=worker_start_failed worker=%s reason=%r", worker.name,
                                str(exc))  # fmt: skip

    def _purge_withheld_content(self) -> None:
        """Before anything reads the outbox: content today's file rule withholds (keys an
        older index took in) is rewritten as flagged names, and replayed as such below."""
        from patchstream.producers.outbox import Outbox, outbox_path
        from patchstream.producers.outbox_purge import purge_withheld

        path = outbox_path(self.settings)
        if not self.settings.gateway.outbox or not path.exists():
            return
        outbox = Outbox(path)
        try:
            purge_withheld(outbox, self.settings.parsing.max_file_bytes)
        finally:
            outbox.close()

    def _audited_at_start(self) -> bool:
        milvus = next((s for s in self.services if s.name == "milvus"), None)
        if milvus is not None and not milvus.answers():  # recovering: it listens once done
            log.debug("event=vector_audit_deferred error=milvus_not_answering")
            return False
        try:
            self.outbox.audit_at_start()
            return True
        except Exception as exc:  # Milvus not answering yet: the next check tries again
            log.warning("event=vector_audit_deferred error=%s: %s", type(exc).__name__,
                        str(exc)[:200])  # fmt: skip
            return False

    def _wait_for_port(self, worker: Worker, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if port_is_open(self.settings.query.host, worker.port or 0):
                return
            if not worker.alive():
                break
            time.sleep(0.1)
        raise ServiceError(
            f"{worker.name} did not listen on port {worker.port}; see {worker.log_path}"
        )

    def describe(self) -> list[str]:
        lines = [f"{s.name:<12} listening on {s.url}  (log {s.log_path})" for s in self.services]
        for w in self.workers:
            where = f"listening on {self.settings.query.host}:{w.port}, " if w.port else ""
            if w.metrics_port:
                where = f"/metrics on {self.settings.metrics.host}:{w.metrics_port}, "
            state = f"running, pid {w.process.pid}" if w.process else "not started"
            if w.service == VECTOR_SINK and self.vector_sink_held:
                state = "waits for the vector tier's start audit (Milvus not answering yet)"
            lines.append(f"{w.name:<12} {where}{state}  (log {w.log_path})")
        return lines

    def check(self) -> None:
        """Restart whatever died, with exponential backoff per child."""
        now = time.monotonic()
        self._maybe_recycle_broker(now)
        for index, service in enumerate(self.services):
            if service.alive() and not service.alive_and_answering():
                service.stop(timeout=5)  # alive but not answering: restart it below
            if not service.alive():
                log.warning(
                    "event=service_died service=%s code=%s",
                    service.name,
                    service.process.returncode,
                )
                if service.name == "tansu":
                    self._reset_consumers()
                try:
                    self.services[index] = self._start_service(service.name, service.port)
                except ServiceError as exc:  # still down: the next check tries again
                    log.error("event=service_down service=%s reason=%r", service.name,
                              str(exc)[-800:])  # fmt: skip
                    continue
                if service.name == "tansu":  # memory-only: a restarted broker has no topics
                    asyncio.run(ensure_topics(self.settings.kafka))
                    self.outbox.replay_due = True  # and none of what it had acknowledged
                if service.name == "milvus":  # killed, it may have lost rows it had flushed
                    self.outbox.vectors_restarted()
                if service.name == "falkordb":
                    # With appendfsync everysec, a write FalkorDB answered may not have
                    # reached its log (a slow fsync postpones it up to 2 s): every entry the
                    # graph lacks after the restart is published again now, not at a recheck.
                    self.outbox.replay_due = True
        if self.vector_sink_held and self._audited_at_start():
            self.vector_sink_held = False
            log.info("event=vector_sink_released reason=vector_tier_audited")
        env, moved = self.environment(), False
        for worker in self.workers:
            if worker.alive() or now < worker.next_start:
                continue
            if worker.service == VECTOR_SINK and self.vector_sink_held:
                continue
            code = worker.process.returncode if worker.process else None
            log.warning("event=worker_restart worker=%s code=%s restarts=%d", worker.name, code,
                        worker.restarts)  # fmt: skip
            if worker.metrics_port is not None and not self.settings.embedded.metrics_port:
                # "Any free port" was free when chosen, not when the child bound it (another
                # process took it and the child died on EADDRINUSE): a new one each start.
                worker.metrics_port, moved = free_port(), True
            worker.start(env)
            # A child that keeps crashing is restarted less and less often.
            worker.next_start = now + min(_MAX_BACKOFF_S, 2.0**worker.restarts)
            worker.restarts += 1
            if worker.service == "gateway":  # it may have died between outbox and publish
                self.outbox.replay_due = True
            if worker.service == VECTOR_SINK and code is not None:  # a death, not a first start
                self.outbox.vector_sink_restarted()  # it may have died between rows and records
        if moved:
            self.write_metrics_targets()  # Prometheus's file_sd follows the moved ports
        self.tend_outbox(now)
        held = frozenset({VECTOR_SINK} if self.vector_sink_held else ())
        self.stalls.tend(now, self.settings.kafka, lambda s: self._kill_consumers((s,)), held)
        self.maybe_reconcile(now)

    def _maybe_recycle_broker(self, now: float) -> None:
        """Stop the memory-only broker once it is over its bound with nothing unconsumed; the
        loop below starts it again as it would a crashed one (``broker_recycle``)."""
        tansu = next((s for s in self.services if s.name == "tansu"), None)
        if tansu is None or not tansu.alive():
            return
        memory = rss_mib(tansu.process.pid)
        # Trace events are not in the outbox: an unconsumed one would be lost, so they count.
        lags = functools.partial(read_lags, self.settings.kafka, runtime_edges=True)
        if self.recycler.due(now, memory, lags):
            log.warning("event=broker_recycled rss_mib=%.0f bound_mib=%d reason=all_consumed",
                        memory or 0.0, self.recycler.bound_mib)  # fmt: skip
            tansu.stop(timeout=5)

    def _kill_consumers(self, services: tuple[str, ...]) -> None:
        """SIGKILL (nothing of theirs is committed that should not be); the next check starts
        them again, and it was not a crash of theirs: no backoff."""
        for worker in self.workers:
            if worker.service in services and worker.alive():
                assert worker.process is not None
                worker.process.kill()
                worker.process.wait(15)
                worker.next_start = 0.0
                worker.restarts = 0

    def _reset_consumers(self) -> None:
        """The memory-only broker died, and its log with it: a consumer that lived through
        the restart would fetch (and commit) its old offsets in the new, shorter log and skip
        what the outbox replays there. Every consumer is killed before the new broker exists
        (so none can commit into it) and started fresh below, from the earliest offset."""
        self._kill_consumers(tuple(TIER_SERVICES.values()))
        log.warning("event=consumers_reset reason=broker_restarted")

    def maybe_reconcile(self, now: float) -> None:
        """Every ``reconcile_interval_s``, ``patchstream reconcile --all`` as a child (the
        loop that restarts services must not wait on it)."""
        interval = self.settings.embedded.reconcile_interval_s
        running = self.reconciler is not None and self.reconciler.poll() is None
        if not interval or now < self.next_reconcile or running:
            return
        self.next_reconcile = now + interval
        env = child_environment(self.environment(), "reconcile")
        log_path = self.data_dir / "logs" / "reconcile.log"
        with log_path.open("ab") as log_file:
            self.reconciler = subprocess.Popen(
                with_parent_lifetime([sys.executable, "-m", "patchstream.cli.main", "reconcile",
                                      "--all"]),
                env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def tend_outbox(self, now: float) -> None:
        self.outbox.settings = self.settings  # start() resolves the embedded addresses
        self.outbox.tend(now)

    def stop(self) -> None:
        """Every worker is told at once and waited for together (a slow one no longer delays
        the others by its whole grace period), then the services in reverse order."""
        self.stopping = True
        if self.reconciler is not None and self.reconciler.poll() is None:
            self.reconciler.terminate()
        for worker in self.workers:
            worker.terminate()
        deadline = time.monotonic() + 15.0
        for worker in reversed(self.workers):
            worker.wait_or_kill(max(0.1, deadline - time.monotonic()))
        for service in reversed(self.services):
            service.stop()
        self.outbox.close()
        self.lock.release()

    def run_forever(self, poll_s: float = 1.0, ready: Callable[[], None] | None = None) -> None:
        """Tend the children until SIGINT or SIGTERM, then stop everything. ``ready`` runs once
        the handlers are in place: a user (or a test) that reacts to the banner at once must
        find a stop, not a default handler that leaves the children to die unstopped."""

        def on_signal(signum: int, _frame: object) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, on_signal)
        try:
            if ready is not None:
                ready()
            while True:
                time.sleep(poll_s)
                self.check()
        except KeyboardInterrupt:
            pass
        finally:
            # Ctrl-C under `make run` brings a second signal (the script's trap forwards a
            # TERM): one arriving mid-stop would abort it and orphan the children.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.stop()
