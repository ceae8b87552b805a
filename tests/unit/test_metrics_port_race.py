"""A child whose "any free port" for /metrics was taken between the supervisor's choice and
its own bind dies on EADDRINUSE; its restart gets a new port, and Prometheus's target list
names the new one (a suite run lost a parse worker's metrics to this race)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

from patchstream.config.settings import EmbeddedSettings, Settings
from patchstream.embedded.supervisor import Supervisor, Worker
from tests.e2e.conftest import wait_for

# Binds the port PATCHSTREAM_METRICS names, as serve_metrics does, and serves until stopped.
BIND = (
    "import json, os, socket, time\n"
    "port = json.loads(os.environ['PATCHSTREAM_METRICS'])['port']\n"
    "s = socket.socket(); s.bind(('127.0.0.1', port)); s.listen(); time.sleep(60)\n"
)


def test_a_child_that_lost_its_metrics_port_comes_back_on_another(tmp_path: Path) -> None:
    supervisor = Supervisor(Settings(embedded=EmbeddedSettings(data_dir=str(tmp_path),
                                                               metrics_port=0)))  # fmt: skip
    thief = socket.socket()
    thief.bind(("127.0.0.1", 0))
    thief.listen()
    taken = thief.getsockname()[1]
    worker = Worker("parse-0", [sys.executable, "-c", BIND], tmp_path / "parse-0.log",
                    service="parse", metrics_port=taken)  # fmt: skip
    supervisor.workers = [worker]
    supervisor.tend_outbox = lambda now: None  # type: ignore[method-assign]
    supervisor.maybe_reconcile = lambda now: None  # type: ignore[method-assign]
    supervisor.stalls.tend = lambda *args: None  # type: ignore[method-assign]
    try:
        worker.start(supervisor.environment())
        assert worker.process is not None and worker.process.wait(timeout=30) != 0
        supervisor.check()
        assert worker.alive() and worker.metrics_port not in (None, taken)
        targets = json.loads((tmp_path / "prometheus" / "targets.json").read_text())
        assert targets[0]["targets"] == [f"127.0.0.1:{worker.metrics_port}"], targets
        port = worker.metrics_port
        assert port is not None

        def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, 30, "the restarted child on its new port")
    finally:
        thief.close()
        worker.stop(timeout=5)
