"""The vector sink waits for the start's audit of the vector tier: while Milvus does not
answer it, the supervisor's checks leave the sink stopped and every other worker running;
the first check whose audit passes starts it."""

from __future__ import annotations

import sys
from pathlib import Path

from patchstream.config.settings import EmbeddedSettings, Settings
from patchstream.embedded.supervisor import VECTOR_SINK, Supervisor, Worker
from patchstream.errors import StoreUnavailable


def test_the_vector_sink_starts_after_the_first_audit_that_passes(tmp_path: Path) -> None:
    supervisor = Supervisor(Settings(embedded=EmbeddedSettings(data_dir=str(tmp_path))))
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    supervisor.workers = [
        Worker("graph-sink", sleeper, tmp_path / "graph.log", service="graph-sink"),
        Worker("vector-sink", sleeper, tmp_path / "vector.log", service=VECTOR_SINK),
    ]
    answers = iter([False, False, True])  # Milvus answers the third audit

    def audit_at_start() -> None:
        if not next(answers):
            raise StoreUnavailable("Milvus has_collection failed: not answering")
        supervisor.outbox.audit_due = False

    supervisor.outbox.audit_at_start = audit_at_start  # type: ignore[method-assign]
    # What a check also tends (the outbox, stalls, reconcile) needs the stores: not here.
    supervisor.tend_outbox = lambda now: None  # type: ignore[method-assign]
    supervisor.maybe_reconcile = lambda now: None  # type: ignore[method-assign]
    supervisor.stalls.tend = lambda *args: None  # type: ignore[method-assign]
    supervisor.vector_sink_held = not supervisor._audited_at_start()
    graph, vector = supervisor.workers
    try:
        assert supervisor.vector_sink_held
        supervisor.check()
        assert graph.alive() and not vector.alive() and supervisor.vector_sink_held
        supervisor.check()
        assert vector.alive() and not supervisor.vector_sink_held
        assert not supervisor.outbox.audit_due
    finally:
        for worker in supervisor.workers:
            worker.stop(timeout=5)


def test_a_vector_sink_started_again_makes_an_audit_due(tmp_path: Path) -> None:
    """A sink killed between a batch's chunk rows and its file records leaves rows no record
    lists: its restart makes the tender's next round audit the vector tier."""
    supervisor = Supervisor(Settings(embedded=EmbeddedSettings(data_dir=str(tmp_path))))
    quick = [sys.executable, "-c", "pass"]
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    supervisor.workers = [
        Worker("graph-sink", quick, tmp_path / "graph.log", service="graph-sink"),
        Worker("vector-sink", sleeper, tmp_path / "vector.log", service=VECTOR_SINK),
    ]
    supervisor.tend_outbox = lambda now: None  # type: ignore[method-assign]
    supervisor.maybe_reconcile = lambda now: None  # type: ignore[method-assign]
    supervisor.stalls.tend = lambda *args: None  # type: ignore[method-assign]
    graph, vector = supervisor.workers
    try:
        for worker in supervisor.workers:
            worker.start({})
        graph.process.wait(10)  # type: ignore[union-attr]
        supervisor.check()  # the graph sink ended and is started again
        assert graph.restarts == 1 and not supervisor.outbox.audit_due
        vector.process.kill()  # type: ignore[union-attr]
        vector.process.wait(10)  # type: ignore[union-attr]
        supervisor.check()
        assert vector.alive() and supervisor.outbox.audit_due
    finally:
        for worker in supervisor.workers:
            worker.stop(timeout=5)
