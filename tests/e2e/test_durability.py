"""Acknowledged means durable on the embedded stack: the memory-only broker dies with
acknowledged, unconsumed writes; the supervisor restarts it and replays the outbox."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchstream.client import PatchClient
from patchstream.config.settings import (
    EmbeddedSettings,
    GatewaySettings,
    KafkaSettings,
    PipelineSettings,
    QuerySettings,
    Settings,
)
from patchstream.embedded.broker_recycle import BrokerRecycler
from patchstream.embedded.services import free_port
from patchstream.embedded.supervisor import Supervisor
from patchstream.producers.outbox import Outbox, outbox_path
from tests.e2e.conftest import running_on_free_ports, wait_for


@pytest.fixture(scope="module")
def durable_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    def settings() -> Settings:
        return Settings(
            embedded=EmbeddedSettings(data_dir=str(tmp_path_factory.mktemp("durable")),
                                      kafka_port=free_port(), falkordb_port=free_port(),
                                      milvus_port=free_port(), metrics_port=0, parse_workers=2),
            kafka=KafkaSettings(topic_prefix=f"dur{uuid.uuid4().hex[:6]}.", partitions=4),
            pipeline=PipelineSettings(sink_batch_wait_ms=50, retry_backoff_s=0.1),
            query=QuerySettings(port=free_port(), api_keys={"key-acme": "acme"}),
            gateway=GatewaySettings(port=free_port()),
        )  # fmt: skip

    with running_on_free_ports(settings) as supervisor:
        yield supervisor


def test_writes_acknowledged_before_the_broker_died_are_applied(durable_stack: Supervisor) -> None:
    stack = durable_stack
    workers = [w for w in stack.workers if w.service == "parse"]
    # The gateway binds loopback with no keys: the dev key, tenant "default".
    for worker in workers:  # the parse workers stop consuming: the writes stay in the broker
        assert worker.process is not None
        os.kill(worker.process.pid, signal.SIGSTOP)
    receipts = []
    try:
        with PatchClient(stack.settings.gateway.url, "dev-local-key") as client:
            for i in range(30):
                receipts.append(client.write_file("shop", f"acked/f{i}.py",
                                                  f"def f{i}():\n    return {i}\n"))  # fmt: skip
        assert Outbox(outbox_path(stack.settings)).count() >= 30
        tansu = next(s for s in stack.services if s.name == "tansu")
        tansu.process.kill()  # kill -9: everything it held is gone
        tansu.process.wait(10)
        stack.check()  # the supervisor restarts it and replays the outbox
    finally:
        for worker in workers:
            assert worker.process is not None
            os.kill(worker.process.pid, signal.SIGCONT)
    graph_paths = {f"acked/f{i}.py" for i in range(30)}

    def all_applied() -> bool:
        from patchstream.stores.factory import open_graph_store

        graph = open_graph_store(stack.settings)
        try:
            held = set(graph.file_hashes("default", "shop", "main"))
        finally:
            graph.close()
        return graph_paths <= held

    wait_for(all_applied, timeout=240, what="the 30 acknowledged writes in the graph")

    # The outbox lets go of what both tiers hold.
    def pruned() -> bool:
        stack.outbox.next_prune = 0.0
        stack.tend_outbox(time.monotonic())
        return Outbox(outbox_path(stack.settings)).count() == 0

    wait_for(pruned, timeout=240, what="the outbox to be pruned")
    assert Path(outbox_path(stack.settings)).exists()


def test_status_names_every_service_workers_and_sinks_included(durable_stack: Supervisor) -> None:
    """Issue #36: `status` checked the broker, the stores and the query service only."""
    import subprocess
    import sys

    env = durable_stack.environment()  # the reads with the stack's key for tenant acme
    env["PATCHSTREAM_QUERY"] = json.dumps({**json.loads(env["PATCHSTREAM_QUERY"]),
                                           "api_key": "key-acme"})  # fmt: skip

    def status() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "patchstream.cli.main", "status"], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    # A sink serves /metrics once its store answered: right after a start it may not yet.
    wait_for(lambda: status().returncode == 0, timeout=180, what="every service up")
    done = status()
    assert done.returncode == 0, done.stdout + done.stderr
    *services, flagged = done.stdout.splitlines()
    assert flagged.startswith("flagged files: "), done.stdout  # the tenant's, every repository
    assert "not known" not in flagged, flagged  # the service answered it (it once said 422)
    # The query service may add "(search copy loading N%)" right after a start: still up.
    rows = {line.split()[0]: line.split(" (search copy")[0].split()[-1] for line in services}
    expected = {"stack", "kafka", "falkordb", "milvus", "query", "gateway", "parse-0",
                "parse-1", "graph-sink", "vector-sink"}  # fmt: skip
    assert set(rows) == expected and set(rows.values()) == {"up"}, done.stdout
    assert f"(pid {os.getpid()})" in done.stdout  # the stack's `up` is this process here


def test_a_service_that_stops_answering_is_restarted(durable_stack: Supervisor) -> None:
    """A hung FalkorDB keeps its process and its port; only a real request tells."""
    stack = durable_stack
    falkordb = next(s for s in stack.services if s.name == "falkordb")
    os.kill(falkordb.process.pid, signal.SIGSTOP)  # alive, listening, answering nothing
    assert falkordb.alive() and not falkordb.answers()
    for _ in range(3):
        stack.check()
    restarted = next(s for s in stack.services if s.name == "falkordb")
    assert restarted.process.pid != falkordb.process.pid
    assert restarted.answers()


def _lag_is_zero(settings: Settings) -> bool:
    import asyncio

    from patchstream.query.lag import LagProbe

    lags = asyncio.run(LagProbe(settings.kafka, ttl_s=0).lags())
    return all(lag.pending == 0 for lag in lags.values())


def test_replaying_the_whole_topic_three_times_changes_nothing(durable_stack: Supervisor) -> None:
    import asyncio

    from patchstream.bus.topics import Topics
    from patchstream.stores.factory import open_graph_store, open_vector_store
    from tests.integration.test_dlq import _read_all

    stack = durable_stack
    wait_for(lambda: _lag_is_zero(stack.settings), timeout=240, what="the pipeline to drain")
    graph, vectors = open_graph_store(stack.settings), open_vector_store(stack.settings)
    try:
        before = (graph.snapshot("default"), vectors.rows("default"))
        assert before[0].symbols, "the earlier writes are there to replay"
        topic = Topics.from_settings(stack.settings.kafka).patch_events
        everything = asyncio.run(_read_all(stack.settings.kafka, topic))

        async def republish() -> None:
            from patchstream.bus.producer import make_producer

            producer = make_producer(stack.settings.kafka)
            await producer.start()
            for _ in range(3):
                for key, value in everything:
                    await producer.send_and_wait(topic, key=key, value=value)
            await producer.stop()

        asyncio.run(republish())
        wait_for(lambda: _lag_is_zero(stack.settings), timeout=240, what="the replays to drain")
        after = (graph.snapshot("default"), vectors.rows("default"))
        assert after[0].symbols == before[0].symbols and after[0].edges == before[0].edges
        assert after[1] == before[1]
    finally:
        graph.close()
        vectors.close()


def test_two_stacks_side_by_side(durable_stack: Supervisor, tmp_path: Path) -> None:
    """A second stack on other ports (and its own data dir) starts, indexes and answers while
    the first keeps answering: no shared port, no shared file."""
    import asyncio

    from patchstream.indexing.run import index_directory
    from tests.e2e.conftest import make_repo

    second = Supervisor(
        durable_stack.settings.model_copy(update={
            "embedded": EmbeddedSettings(data_dir=str(tmp_path / "second"),
                                         kafka_port=free_port(), falkordb_port=free_port(),
                                         milvus_port=free_port(), metrics_port=0,
                                         parse_workers=1),
            "kafka": KafkaSettings(topic_prefix=f"two{uuid.uuid4().hex[:6]}.", partitions=2),
            "query": QuerySettings(port=free_port(), api_keys={"key-acme": "acme"}),
            "gateway": GatewaySettings(port=free_port()),
        })
    )  # fmt: skip
    try:
        second.start()
        repo = make_repo(tmp_path / "repo", {"a.py": "def a():\n    return 1\n"})
        for stack in (durable_stack, second):
            summary = asyncio.run(index_directory(stack.settings, repo, repo="pair",
                                                  tenant="acme", timeout_s=180,
                                                  progress=False))  # fmt: skip
            assert summary.complete, summary.as_dict()
    finally:
        second.stop()


def test_a_vector_store_whose_files_are_lost_is_rebuilt_from_the_outbox(
    durable_stack: Supervisor,
) -> None:
    """Issue #32 item 4: Milvus killed and its data directory gone. The outbox keeps each
    file's latest acknowledged event (compacted, not pruned), so the restarted store is
    rebuilt from it to what it held, row for row, with no one re-running anything."""
    import shutil

    from patchstream.stores.factory import open_vector_store

    stack = durable_stack
    with PatchClient(stack.settings.gateway.url, "dev-local-key") as client:
        for i in range(5):
            client.write_file("rebuilt", f"r{i}.py", f"def r{i}():\n    return {i}\n")

    def applied() -> bool:
        stack.outbox.next_prune = 0.0
        stack.tend_outbox(time.monotonic())
        return Outbox(outbox_path(stack.settings)).count() == 0

    wait_for(applied, timeout=240, what="both tiers to hold every write")
    vectors = open_vector_store(stack.settings)
    try:
        before = vectors.rows("default")
    finally:
        vectors.close()
    assert {f"default|rebuilt|main|r{i}.py" for i in range(5)} <= {r[1] for r in before}
    assert Outbox(outbox_path(stack.settings)).retained() >= 35  # the earlier writes too

    milvus = next(s for s in stack.services if s.name == "milvus")
    milvus.process.kill()
    milvus.process.wait(10)
    shutil.rmtree(stack.data_dir / "milvus")
    stack.check()  # restarts it on an empty directory, and replays what it lacks

    def rebuilt() -> bool:
        stack.tend_outbox(time.monotonic())
        try:
            store = open_vector_store(stack.settings)
        except Exception:
            return False
        try:
            return store.rows("default") == before
        finally:
            store.close()

    wait_for(rebuilt, timeout=300, what="the vector tier rebuilt from the outbox")


def test_a_broker_over_its_memory_bound_is_restarted_empty_once_all_is_consumed(
    durable_stack: Supervisor,
) -> None:
    """Tansu keeps every record it is sent (it applies no retention): past its bound, and only
    when nothing is left unconsumed, `up` restarts it empty; nothing is lost either way."""
    from patchstream.stores.factory import open_graph_store

    stack = durable_stack
    url = stack.settings.gateway.url

    def broker_pid() -> int:
        return next(s for s in stack.services if s.name == "tansu").process.pid

    def in_graph(paths: set[str]) -> bool:
        graph = open_graph_store(stack.settings)
        try:
            return paths <= set(graph.file_hashes("default", "recycle", "main"))
        finally:
            graph.close()

    with PatchClient(url, "dev-local-key") as client:
        for i in range(5):
            client.write_file("recycle", f"a{i}.py", f"def a{i}():\n    return {i}\n")
    wait_for(lambda: in_graph({f"a{i}.py" for i in range(5)}), what="the first writes")
    original, first_pid = stack.recycler, broker_pid()
    stack.recycler = BrokerRecycler(bound_mib=1)  # every broker is over 1 MiB
    workers = [w for w in stack.workers if w.service == "parse"]
    try:
        for worker in workers:  # the parse tier falls behind: nothing may be recycled away
            assert worker.process is not None
            os.kill(worker.process.pid, signal.SIGSTOP)
        try:
            with PatchClient(url, "dev-local-key") as client:
                client.write_file("recycle", "behind.py", "def behind():\n    return 0\n")
            wait_for(lambda: not _lag_is_zero(stack.settings), what="the write to be pending")
            stack.recycler.next_check = 0.0
            stack.check()
            assert broker_pid() == first_pid  # a tier is behind: kept
        finally:
            for worker in workers:
                assert worker.process is not None
                os.kill(worker.process.pid, signal.SIGCONT)
        wait_for(lambda: in_graph({"behind.py"}) and _lag_is_zero(stack.settings),
                 what="everything consumed")  # fmt: skip

        def recycled() -> bool:
            stack.recycler.next_check = 0.0
            stack.check()
            return broker_pid() != first_pid

        wait_for(recycled, timeout=60, what="the broker restarted empty")
        stack.recycler = original

        def written() -> bool:  # the gateway may answer 503 until it reaches the new broker
            try:
                with PatchClient(url, "dev-local-key") as client:
                    client.write_file("recycle", "after.py", "def after():\n    return 1\n")
            except Exception:
                return False
            return True

        wait_for(written, timeout=60, what="the gateway to take a write again")

        def after_applied() -> bool:
            stack.check()
            return in_graph({"after.py", "behind.py", *(f"a{i}.py" for i in range(5))})

        wait_for(after_applied, timeout=180, what="a write after the restart")
    finally:
        stack.recycler = original


def test_graph_writes_its_log_never_held_are_replayed_after_a_kill(
    durable_stack: Supervisor,
) -> None:
    """Issue #52: FalkorDB runs with ``appendfsync everysec``; under a slow fsync it answers a
    write before the write reaches its log, and a SIGKILL then loses it. The test makes that
    loss certain rather than likely: after the writes were applied (and the outbox counted
    them applied), FalkorDB is killed and its log cut back to where it stood before them,
    which is what a restart finds after a postponed write. The stack must end as it was."""
    import redis

    from patchstream.embedded.services import falkordb_password
    from patchstream.stores.factory import open_graph_store, open_vector_store

    stack = durable_stack
    falkordb = next(s for s in stack.services if s.name == "falkordb")
    password = falkordb_password(stack.data_dir / "falkordb")
    admin = redis.Redis(port=falkordb.port, password=password)
    admin.config_set("auto-aof-rewrite-percentage", 0)  # the log's tail stays one file

    def log_settled() -> bool:
        info = admin.info("persistence")
        return not int(info["aof_buffer_length"]) and not int(info["aof_rewrite_in_progress"])

    wait_for(log_settled, timeout=60, what="FalkorDB's log to hold every write")
    (tail,) = (stack.data_dir / "falkordb" / "appendonlydir").glob("*.incr.aof")
    cut_at = tail.stat().st_size
    admin.close()
    paths = [f"unlogged/g{i}.py" for i in range(12)]
    with PatchClient(stack.settings.gateway.url, "dev-local-key") as client:
        for i, path in enumerate(paths):
            client.write_file("unlogged", path, f"def g{i}(x):\n    return helper(x) + {i}\n")

    graph, vectors = open_graph_store(stack.settings), open_vector_store(stack.settings)
    try:
        wait_for(lambda: set(paths) <= set(graph.file_hashes("default", "unlogged", "main"))
                 and set(paths) <= set(vectors.file_hashes("default", "unlogged", "main")),
                 timeout=120, what="the writes in both tiers")  # fmt: skip

        def counted_applied() -> bool:  # so only a recheck of applied entries can find them
            stack.outbox.next_prune = 0.0
            stack.tend_outbox(time.monotonic())
            outbox = Outbox(outbox_path(stack.settings))
            try:
                owed = outbox.pending(limit=1000, after_id=0, retained=False)
            finally:
                outbox.close()
            return not [e for e in owed if e.repo == "unlogged"]

        wait_for(counted_applied, timeout=120, what="the outbox to count the writes applied")
        before = graph.snapshot("default")
        assert sum(f"::{path}::g" in str(row) for row in before.symbols for path in paths) == 12
    finally:
        graph.close()
    falkordb.process.kill()
    falkordb.process.wait(10)
    with tail.open("r+b") as log:  # what a postponed write looks like to a restart
        log.truncate(cut_at)
    logged = b"".join(p.read_bytes() for p in tail.parent.iterdir() if p.is_file())
    assert not [path for path in paths if path.encode() in logged]  # gone from every log file
    stack.check()  # restarts FalkorDB without them, and replays what the graph lacks
    graph = open_graph_store(stack.settings)
    try:

        def healed() -> bool:
            stack.outbox.next_prune = 0.0
            stack.tend_outbox(time.monotonic())
            return graph.snapshot("default") == before

        # Well inside the outbox's periodic recheck (60 s) and redelivery (60 s): without a
        # replay at FalkorDB's restart, the writes would still be missing here.
        wait_for(healed, timeout=45, what="the graph to hold the acknowledged writes again")
    finally:
        graph.close()
        vectors.close()
