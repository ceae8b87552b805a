"""Record batches compressed on the bus, against the real broker: what a consumer reads back
is what was sent, and the memory-only broker holds the compressed bytes (it keeps every
record it is sent, so its memory is the bus's size)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiokafka import AIOKafkaConsumer

from patchstream.bus.producer import compression_type, make_producer
from patchstream.bus.topics import ensure_topics
from patchstream.config.settings import KafkaSettings
from patchstream.embedded.services import Service, start_tansu
from tests.integration.conftest import _on_a_free_port

# A file delta's shape: JSON with code in it, as compressible as the real ones.
CODE = "def total(lines):\n    return sum(line.amount for line in lines if line.open)\n"
RECORDS = [
    json.dumps(
        {"path": f"pkg/m{i}.py", "chunks": [{"text": CODE * 40, "line": j} for j in range(8)]}
    ).encode()
    for i in range(900)
]


def _rss_mib(service: Service) -> float:
    for line in Path(f"/proc/{service.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("the broker is gone")


async def _send_and_read_back(kafka: KafkaSettings) -> list[bytes]:
    topics = await ensure_topics(kafka)
    producer = make_producer(kafka)
    await producer.start()
    try:
        sent = [await producer.send(topics.file_deltas, value) for value in RECORDS]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topics.file_deltas, bootstrap_servers=kafka.bootstrap,
                                group_id=f"{kafka.topic_prefix}read",
                                auto_offset_reset="earliest")  # fmt: skip
    await consumer.start()
    received: list[bytes] = []
    try:
        async with asyncio.timeout(60):
            while len(received) < len(RECORDS):
                batches = await consumer.getmany(timeout_ms=500)
                received += [r.value for rs in batches.values() for r in rs if r.value]
    finally:
        await consumer.stop()
    return received


def _broker_growth(tmp_path: Path, compression: str) -> float:
    """MiB the broker grew by holding RECORDS, and a check that they came back whole."""
    broker = _on_a_free_port(start_tansu, tmp_path / compression)
    try:
        kafka = KafkaSettings(bootstrap=broker.url, topic_prefix=f"{compression}.",
                              partitions=1, compression=compression)  # fmt: skip
        before = _rss_mib(broker)
        received = asyncio.run(_send_and_read_back(kafka))
        assert sorted(received) == sorted(RECORDS)
        return _rss_mib(broker) - before
    finally:
        broker.stop()


def test_the_default_compresses_and_the_broker_holds_a_fraction_of_the_plain_bytes(
    tmp_path: Path,
) -> None:
    assert compression_type(KafkaSettings()) == "zstd"
    plain = _broker_growth(tmp_path, "none")
    compressed = _broker_growth(tmp_path, "zstd")
    raw_mib = sum(map(len, RECORDS)) / 2**20
    assert plain > raw_mib / 2  # the plain records are held as sent (~1x, and more)
    assert compressed < plain / 3  # zstd: the records are ~1% of their size, the rest overhead
