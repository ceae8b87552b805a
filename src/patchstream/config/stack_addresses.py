"""Where the embedded stack's services answer, from its settings alone: what ``up`` serves
and what a client beside it reads (a CLI in another terminal finds the stack's Milvus socket
with no setting, as ``up``'s own children are told it)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path

from patchstream.config.settings import EmbeddedSettings
from patchstream.errors import ConfigError

# Backing services never leave loopback; ``embedded.host`` is for the HTTP services only.
BACKING_HOST = "127.0.0.1"
SOCKET_PATH_MAX = 100  # of the kernel's 108 bytes, with room to spare


def embedded_milvus_uri(embedded: EmbeddedSettings) -> str:
    """Where ``up``'s Milvus answers: its socket, or ``milvus_port`` with the socket off."""
    if embedded.milvus_socket:
        return f"unix:{milvus_socket_path(Path(embedded.data_dir))}"
    return f"http://{BACKING_HOST}:{embedded.milvus_port}"


def milvus_socket_path(data_dir: Path) -> Path:
    """Where the embedded Milvus listens: in its data dir, or where the path is too long for
    a socket (the kernel caps it at 108 bytes), in this user's private runtime directory
    under a name derived from the data dir (the same at every start, for clients that
    outlive a restart of the server)."""
    data_dir = data_dir.resolve()
    inside = data_dir / "milvus.sock"
    if len(os.fsencode(inside)) <= SOCKET_PATH_MAX:
        return inside
    digest = hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:20]
    path = private_runtime_dir() / f"milvus-{digest}.sock"
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        raise ConfigError(f"no socket path for Milvus under {SOCKET_PATH_MAX} bytes ({path}): "
                          f"use a shorter data dir or XDG_RUNTIME_DIR")  # fmt: skip
    return path


def private_runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/patchstream`` or ``/tmp/patchstream-UID``: made mode 0700, and
    refused if another user owns it or can enter it."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    name = "patchstream" if os.environ.get("XDG_RUNTIME_DIR") else f"patchstream-{os.getuid()}"
    path = Path(base) / name
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ConfigError(f"{path} must be a directory only this user owns and enters (0700)")
    return path
