"""Real requests that tell a hung service from a live one (a stopped process still accepts
TCP connections: the kernel completes the handshake for it)."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

_API_VERSIONS = 18
_PROBE_ID = 0x7073  # a correlation id the answer must echo


def kafka_answers(host: str, port: int, timeout: float = 3.0) -> bool:
    """A Kafka ApiVersions (v0) request, answered with our correlation id."""
    client = b"patchstream-probe"
    body = struct.pack(">hhih", _API_VERSIONS, 0, _PROBE_ID, len(client)) + client
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(body)) + body)
            header = _read(sock, 8)
    except OSError:
        return False
    if header is None:
        return False
    correlation: int = struct.unpack(">ii", header)[1]
    return correlation == _PROBE_ID


def grpc_answers(target: str, timeout: float = 3.0) -> bool:
    """An HTTP/2 connection a gRPC server (Milvus) must complete itself; ``target`` is
    ``host:port`` or ``unix:PATH``."""
    import grpc

    # Refused connections retried within 0.1-0.5 s (a flooded Unix socket refuses at once);
    # a connection of its own, never one of the process's pool that a stopped server opened
    # before it stopped (the probe then said "answering" of a SIGSTOPped Milvus).
    channel = grpc.insecure_channel(target, options=[
        ("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 500), ("grpc.use_local_subchannel_pool", 1),
    ])  # fmt: skip
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


def unix_socket_accepts(path: str | Path, timeout: float = 0.2) -> bool:
    """Whether something accepts connections on the Unix socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        return sock.connect_ex(str(path)) == 0


def _read(sock: socket.socket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data
