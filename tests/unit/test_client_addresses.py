"""A terminal beside ``up`` reaches the stack its settings name: an address left unset follows
the embedded stack's ports; an address set explicitly (a compose deployment's) wins."""

from __future__ import annotations

import json

import pytest

from patchstream.config.settings import (
    EmbeddedSettings,
    GatewaySettings,
    KafkaSettings,
    QuerySettings,
    Settings,
    client_host,
)


def test_defaults_name_the_default_stack() -> None:
    settings = Settings()
    assert settings.kafka.bootstrap == "127.0.0.1:19092"
    assert settings.graph.falkordb_port == 6479
    assert settings.query.url == "http://127.0.0.1:8731"


def test_moved_ports_are_followed_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHSTREAM_EMBEDDED", json.dumps({"kafka_port": 29092,
                                                            "falkordb_port": 16479}))  # fmt: skip
    monkeypatch.setenv("PATCHSTREAM_QUERY__PORT", "18731")
    settings = Settings()
    assert settings.kafka.bootstrap == "127.0.0.1:29092"
    assert settings.graph.falkordb_port == 16479
    assert settings.query.url == "http://127.0.0.1:18731"


def test_an_address_set_explicitly_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHSTREAM_EMBEDDED__KAFKA_PORT", "29092")
    monkeypatch.setenv("PATCHSTREAM_KAFKA__BOOTSTRAP", "kafka:9092")  # compose
    monkeypatch.setenv("PATCHSTREAM_QUERY__URL", "https://patchstream.example.com")
    settings = Settings()
    assert settings.kafka.bootstrap == "kafka:9092"
    assert settings.query.url == "https://patchstream.example.com"


def test_a_section_passed_in_is_not_changed_for_the_next_settings() -> None:
    kafka = KafkaSettings(topic_prefix="t.")
    first = Settings(kafka=kafka, embedded=EmbeddedSettings(kafka_port=1111))
    second = Settings(kafka=kafka, embedded=EmbeddedSettings(kafka_port=2222))
    assert (first.kafka.bootstrap, second.kafka.bootstrap) == ("127.0.0.1:1111", "127.0.0.1:2222")
    assert "bootstrap" not in kafka.model_fields_set


def test_a_service_listening_everywhere_is_reached_on_loopback() -> None:
    assert Settings(query=QuerySettings(host="0.0.0.0", port=9)).query.url == "http://127.0.0.1:9"
    assert client_host("::") == "[::1]" and client_host("10.0.0.5") == "10.0.0.5"
    assert Settings(gateway=GatewaySettings(host="0.0.0.0")).gateway.url == ""  # emit: direct


def test_a_derived_address_still_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook keeps a session's working state only in a query service named explicitly."""
    from patchstream.producers.claude_session import query_configured

    assert not query_configured(Settings())
    assert Settings().kafka.model_fields_set == set()
    monkeypatch.setenv("PATCHSTREAM_QUERY__URL", "http://127.0.0.1:8731")
    assert query_configured(Settings())
