"""FalkorDB restarts from its append-only log whatever clients do meanwhile.

Issue #32: a client whose command Redis served while it replayed a MULTI/EXEC of the graph
sink's writes aborted the server (``'!server.in_exec'``) on every start once the log's tail
was a few MB. The embedded FalkorDB now loads on a private Unix socket and opens its TCP port
only once loaded: the test below aborts today's main and passes here."""

from __future__ import annotations

import random
import signal
import socket
import threading
import time
from pathlib import Path

import redis

from patchstream.embedded.falkordb_load import failure_reason
from patchstream.embedded.services import free_port, start_falkordb
from patchstream.parsing.delta import diff_states
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.testing.faults import synthetic_corpus

PASSWORD = "restart-test"


def _hello_in_a_tight_loop(port: int, stop: threading.Event, answers: dict[str, int]) -> None:
    """What the stack's clients do at a start: connect and send ``HELLO 3 AUTH``, again and
    again, until told to stop."""
    hello = (f"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n"
             f"${len(PASSWORD)}\r\n{PASSWORD}\r\n").encode()  # fmt: skip
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(hello)
                kind = "answered" if sock.recv(64) else "closed"
        except OSError:
            kind = "refused"
        answers[kind] = answers.get(kind, 0) + 1


def _big_files_log(tmp_path: Path, port: int, files: int = 30) -> FalkorGraphStore:
    """About 5 MB of log tail (at 30 files): files of 150 functions, one MULTI/EXEC each,
    never rewritten into a snapshot (the test disables that)."""
    corpus = tmp_path / "corpus"
    synthetic_corpus(corpus, 30)
    extra = "".join(f"\n\ndef extra{k}(a, b):\n    return helper_x(a) + other{k}(b)\n"
                    for k in range(150))  # fmt: skip
    builder = FileStateBuilder()
    deltas = []
    for path in sorted(corpus.rglob("mod*.py"))[:files]:
        ref = FileRef("t", "r", "main", path.relative_to(corpus).as_posix(), 1)
        deltas.append(diff_states(None, builder.build(ref, path.read_bytes() + extra.encode())))
    store = FalkorGraphStore(port=port, password=PASSWORD)
    redis.Redis(port=port, password=PASSWORD).config_set("auto-aof-rewrite-percentage", 0)
    for start in range(0, len(deltas), 8):
        store.apply_many(deltas[start : start + 8])
    _wait_until_the_log_holds_every_write(port)
    return store


def _wait_until_the_log_holds_every_write(port: int) -> None:
    """With ``appendfsync everysec`` Redis answers a write before it reaches the log file
    when a background fsync is slow (a loaded machine): it postpones the write up to 2 s. A
    SIGKILL then loses it, as documented, and the graph sink's reconciler restores it in a
    stack. This test compares snapshots, so it kills only once the buffer is written."""
    client = redis.Redis(port=port, password=PASSWORD)
    deadline = time.monotonic() + 30
    try:
        while int(client.info("persistence")["aof_buffer_length"]) > 0:
            assert time.monotonic() < deadline, client.info("persistence")
            time.sleep(0.05)
    finally:
        client.close()


def test_clients_connecting_during_the_load_of_a_long_log_cannot_abort_it(tmp_path: Path) -> None:
    port = free_port()
    service = start_falkordb(tmp_path / "falkordb", port, password=PASSWORD)
    store = _big_files_log(tmp_path, port)
    expected = store.snapshot("t")
    store.close()
    tails = list((tmp_path / "falkordb" / "appendonlydir").glob("*.incr.aof"))
    assert sum(p.stat().st_size for p in tails) > 3_000_000  # the size that aborted loads
    service.process.send_signal(signal.SIGKILL)
    service.process.wait()

    stop, answers = threading.Event(), dict[str, int]()
    clients = [threading.Thread(target=_hello_in_a_tight_loop, args=(port, stop, answers))
               for _ in range(3)]  # fmt: skip
    for client in clients:
        client.start()
    try:
        again = start_falkordb(tmp_path / "falkordb", port, password=PASSWORD)
    finally:
        stop.set()
        for client in clients:
            client.join()
    try:
        assert again.alive()
        assert answers.get("refused", 0) > 100  # they knocked all through the load
        store = FalkorGraphStore(port=port, password=PASSWORD)
        assert store.snapshot("t") == expected
        store.close()
        log = (tmp_path / "falkordb" / "falkordb.log").read_text()
        assert "ASSERTION FAILED" not in log
    finally:
        again.stop()


def test_a_replay_slower_than_the_query_timeout_loses_no_write(tmp_path: Path) -> None:
    """FalkorDB applies its query timeout to the writes it replays from its log and drops one
    that runs past it without a word: on a loaded CI machine a restart lost a file's edges
    so. The log now replays with no timeout, and the timeouts are set once it has loaded."""
    port = free_port()
    service = start_falkordb(tmp_path / "falkordb", port, password=PASSWORD)
    client = redis.Redis(port=port, password=PASSWORD)
    # Log the queries themselves (not their effects), so the restart runs them again.
    client.execute_command("GRAPH.CONFIG", "SET", "EFFECTS_THRESHOLD", 10**9)
    client.close()
    store = _big_files_log(tmp_path, port, files=6)
    expected = store.snapshot("t")
    store.close()
    service.process.send_signal(signal.SIGKILL)
    service.process.wait()

    again = start_falkordb(tmp_path / "falkordb", port, password=PASSWORD, query_timeout_ms=1)
    client = redis.Redis(port=port, password=PASSWORD)
    try:  # 1 ms: every replayed query would have run past it
        config = dict(client.execute_command("GRAPH.CONFIG", "GET", "*"))
        assert (config[b"TIMEOUT_DEFAULT"], config[b"TIMEOUT_MAX"]) == (1, 12)
        client.execute_command("GRAPH.CONFIG", "SET", "TIMEOUT_MAX", 0)  # room to read it all
        client.execute_command("GRAPH.CONFIG", "SET", "TIMEOUT_DEFAULT", 0)
        store = FalkorGraphStore(port=port, password=PASSWORD)
        assert store.snapshot("t") == expected
        store.close()
    finally:
        client.close()
        again.stop()


def test_a_damaged_log_is_set_aside_and_the_store_comes_up(tmp_path: Path) -> None:
    """A log Redis refuses (a command's header overwritten mid-file) is copied aside, never
    deleted, and the live one cut at the damage: the store starts with what came before."""
    port = free_port()
    service = start_falkordb(tmp_path / "falkordb", port, password=PASSWORD)
    client = redis.Redis(port=port, password=PASSWORD)
    for i in range(200):
        client.execute_command("GRAPH.QUERY", "g", f"CREATE (:N {{i: {i}}})")
    client.close()
    service.stop()
    (tail,) = (tmp_path / "falkordb" / "appendonlydir").glob("*.incr.aof")
    data = bytearray(tail.read_bytes())
    middle = data.index(b"*", len(data) // 2)  # a command's header, halfway through
    data[middle : middle + 2] = b"?!"
    tail.write_bytes(bytes(data))

    again = start_falkordb(tmp_path / "falkordb", port, password=PASSWORD)
    try:
        client = redis.Redis(port=port, password=PASSWORD, protocol=3)
        count = client.execute_command("GRAPH.QUERY", "g", "MATCH (n:N) RETURN count(n)")[1][0][0]
        client.close()
        assert 50 < count < 200  # what came before the damage, not what came after
        (aside,) = (tmp_path / "falkordb").glob("appendonlydir.damaged-*")
        assert (aside / tail.name).read_bytes() == bytes(data)  # kept as it was found
    finally:
        again.stop()


def test_a_failed_start_says_why_not_the_memory_test() -> None:
    crash = "\n".join([
        "1:M 02 Dec 2026 06:15:48.807 * DB loaded from base file appendonly.aof.1.base.rdb",
        "1:M 02 Dec 2026 06:15:49.492 # === ASSERTION FAILED ===",
        "1:M 02 Dec 2026 06:15:49.492 # ==> server.c:4076 '!server.in_exec' is not true",
        "------ FAST MEMORY TEST ------",
        "Fast memory test PASSED, however your memory can still be broken.",
        "  Suspect RAM error? Use redis-server --test-memory to verify it.",
    ])  # fmt: skip
    reason = failure_reason(crash)
    assert "'!server.in_exec' is not true" in reason
    assert "memory test" not in reason


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
