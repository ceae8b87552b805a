"""Acknowledged means durable on the embedded stack: the memory-only broker dies with
acknowledged, unconsumed writes; the supervisor restarts it and replays the outbox."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchstream.client import PatchClient
from patchstream.embedded.services import free_port
from patchstream.embedded.supervisor import Supervisor
from patchstream.producers.outbox import Outbox, outbox_path
from patchstream.settings import (
    EmbeddedSettings,
    GatewaySettings,
    KafkaSettings,
    PipelineSettings,
    QuerySettings,
    Settings,
)
from tests.e2e.conftest import wait_for


@pytest.fixture(scope="module")
def durable_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    settings = Settings(
        embedded=EmbeddedSettings(data_dir=str(tmp_path_factory.mktemp("durable")),
                                  kafka_port=free_port(), falkordb_port=free_port(),
                                  milvus_port=free_port(), metrics_port=0, parse_workers=2),
        kafka=KafkaSettings(topic_prefix=f"dur{uuid.uuid4().hex[:6]}.", partitions=4),
        pipeline=PipelineSettings(sink_batch_wait_ms=50, retry_backoff_s=0.1),
        query=QuerySettings(port=free_port(), api_keys={"key-acme": "acme"}),
        gateway=GatewaySettings(port=free_port()),
    )  # fmt: skip
    supervisor = Supervisor(settings)
    try:
        supervisor.start()
        yield supervisor
    finally:
        supervisor.stop()


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
        stack.next_prune = 0.0
        stack.tend_outbox(time.monotonic())
        return Outbox(outbox_path(stack.settings)).count() == 0

    wait_for(pruned, timeout=240, what="the outbox to be pruned")
    assert Path(outbox_path(stack.settings)).exists()
