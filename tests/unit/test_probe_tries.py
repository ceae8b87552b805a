"""A probe is one request. redis-py 6+ retries a connect that timed out three times with
backoff, so the probe of a hung FalkorDB (SIGSTOP: it accepts, answers nothing) took 37 s
instead of 3, and the supervisor restarted it 111 s after it hung instead of about 9."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

from patchstream.embedded.services import Service


def test_a_probe_of_a_server_that_answers_nothing_connects_once(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept_and_stay_silent() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted.append(connection)

    threading.Thread(target=accept_and_stay_silent, daemon=True).start()
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    service = Service("falkordb", "127.0.0.1", listener.getsockname()[1], process,
                      tmp_path / "falkordb.log")  # fmt: skip
    try:
        assert not service.answers()
        assert len(accepted) == 1
    finally:
        listener.close()
        process.kill()
        process.wait()
        for connection in accepted:
            connection.close()
