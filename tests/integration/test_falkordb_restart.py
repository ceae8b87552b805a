"""FalkorDB restarts from its AOF after a kill -9 while clients keep connecting, with the
batched writes the graph sink makes (one MULTI/EXEC per batch). A batch written as a few long
merged UNWIND queries instead aborted redis-server on this replay (assertion
'!server.in_exec' when a client connected during the load): the writes stay per file."""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

import redis

from patchstream.embedded.services import free_port, start_falkordb
from patchstream.parsing.delta import diff_states
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.testing.faults import synthetic_corpus


def test_a_killed_falkordb_restarts_from_batched_writes_while_clients_connect(
    tmp_path: Path,
) -> None:
    synthetic_corpus(tmp_path / "corpus", 300)
    builder = FileStateBuilder()
    deltas = [
        diff_states(None, builder.build(
            FileRef("t", "r", "main", p.relative_to(tmp_path / "corpus").as_posix(), 1),
            p.read_bytes()))
        for p in sorted((tmp_path / "corpus").rglob("*.py"))
    ]  # fmt: skip
    port = free_port()
    service = start_falkordb(tmp_path / "falkordb", port)
    store = FalkorGraphStore(port=port)
    for start in range(0, len(deltas), 64):
        store.apply_many(deltas[start : start + 64])
    expected = store.snapshot("t")
    store.close()
    service.process.send_signal(signal.SIGKILL)
    service.process.wait()

    port_again = port
    deadline = time.monotonic() + 60

    def connect_until_loaded() -> None:
        while time.monotonic() < deadline:
            try:
                redis.Redis(port=port_again, protocol=3, socket_timeout=1).ping()
                return
            except (redis.exceptions.BusyLoadingError, redis.exceptions.ConnectionError):
                time.sleep(0.005)

    hammer = threading.Thread(target=connect_until_loaded)
    hammer.start()
    again = start_falkordb(tmp_path / "falkordb", port_again)  # waits until it answers PING
    hammer.join()
    try:
        assert again.alive()
        store = FalkorGraphStore(port=port_again)
        assert store.snapshot("t") == expected
        store.close()
    finally:
        again.stop()


def test_the_log_is_rewritten_as_a_snapshot_so_a_restart_does_not_replay_every_write(
    tmp_path: Path,
) -> None:
    """Every write since the first start, replayed query by query, made a restart of a busy
    stack take minutes; past 4 MB of tail the log is compacted into a snapshot base."""
    port = free_port()
    service = start_falkordb(tmp_path / "falkordb", port)
    client = redis.Redis(port=port, protocol=3)
    try:
        for i in range(60):  # about 6 MB of log (random text: a snapshot compresses repeats)
            blob = random.Random(i).randbytes(50_000).hex()
            client.execute_command("GRAPH.QUERY", "g", f"CREATE (:N {{i: {i}, blob: '{blob}'}})")
        deadline = time.monotonic() + 60
        while int(client.info("persistence")["aof_rewrites"]) < 1:
            assert time.monotonic() < deadline, client.info("persistence")
            time.sleep(0.1)
        while int(client.info("persistence")["aof_rewrite_in_progress"]):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        bases = list((tmp_path / "falkordb" / "appendonlydir").glob("*.base.rdb"))
        assert [p.stat().st_size > 1_000_000 for p in bases] == [True]
    finally:
        client.close()
    service.process.send_signal(signal.SIGKILL)
    service.process.wait()
    again = start_falkordb(tmp_path / "falkordb", port)
    client = redis.Redis(port=port, protocol=3)
    try:
        rows = client.execute_command("GRAPH.QUERY", "g", "MATCH (n:N) RETURN count(n)")
        assert rows[1] == [[60]]
    finally:
        client.close()
        again.stop()
