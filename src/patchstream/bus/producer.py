"""A Kafka producer with the pipeline's durability settings."""

from __future__ import annotations

from aiokafka import AIOKafkaProducer

from patchstream.config.settings import KafkaSettings


def compression_type(kafka: KafkaSettings) -> str | None:
    """The producers' batch compression, as aiokafka and Faust name it (None: plain)."""
    return None if kafka.compression == "none" else kafka.compression


def make_producer(kafka: KafkaSettings, linger_ms: int = 0) -> AIOKafkaProducer:
    """A producer with the pipeline's durability settings (``acks=all`` by default)."""
    return AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap,
        acks="all" if kafka.acks == "all" else int(kafka.acks),
        enable_idempotence=kafka.enable_idempotence,
        max_request_size=kafka.max_message_bytes,
        compression_type=compression_type(kafka),
        linger_ms=linger_ms,
        request_timeout_ms=kafka.request_timeout_ms,
    )
