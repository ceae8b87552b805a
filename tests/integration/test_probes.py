"""The supervisor's health probes tell a hung service from a live one: a stopped process
still accepts TCP connections (the kernel answers the handshake), so only a real request
shows that it no longer answers."""

from __future__ import annotations

import os
import signal

import pytest

from patchstream.embedded.services import Service, port_is_open


@pytest.mark.parametrize("fixture", ["tansu_service", "milvus_service", "falkordb_service"])
def test_a_stopped_service_is_seen_as_not_answering(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    service: Service = request.getfixturevalue(fixture)
    assert service.answers()
    os.kill(service.process.pid, signal.SIGSTOP)
    try:
        assert port_is_open(service.host, service.port)  # what a port check would believe
        assert not service.answers()
    finally:
        os.kill(service.process.pid, signal.SIGCONT)
    assert service.answers()
