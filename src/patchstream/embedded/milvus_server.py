"""``milvus-lite server`` with its memory kept in check and room for open files: what ``up``
runs as Milvus Lite.

Milvus Lite 3.x is Python over Arrow. Measured on scipy's 42k chunk rows (peak RSS of a
fresh server): 1,050 MiB as shipped, 739 MiB with Arrow on the system allocator and glibc
held to two malloc arenas. Arrow's own pool keeps freed buffers, and each gRPC worker thread
otherwise grows its own arena. A thread here also hands freed heap pages back to the kernel
every few seconds (``malloc_trim``): inserts build and drop Python lists of floats for every
vector, which leave holes the heap never returns by itself.

It listens on ``--listen host:port`` or ``unix:PATH``: the embedded stack's socket is made
mode 0700 in its data dir, so no other user's client reaches the store. A client that opens
connections in a tight loop ran the server out of file descriptors (each one held until its
close is processed): the server accepts at most MAX_CONNECTIONS at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchstream.embedded.milvus_rewrite import DELTA_FILES_BOUND, compact_delete_logs
from patchstream.logs import configure_logging
from patchstream.system.heap_trim import start_heap_trim

if TYPE_CHECKING:
    import grpc

log = logging.getLogger(__name__)

# Read at process start (glibc) or at pyarrow's import, so they go in the child's environment;
# a value the operator set wins.
MEMORY_ENV = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_ARENA_MAX": "2",
    # Rows a collection holds unflushed (128 MiB by default, per collection): the vector
    # cache is written without a flush, so it sat at that bound. The vector sink flushes
    # once a fetch; at 8 MiB the server's peak in scipy's cold index was 747-857 MiB against
    # 837-971 at 32 (Milvus's own CPU ~+15%, in the vector tier's nice'd share).
    "MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES": str(8 << 20),
}
# Compaction reads every input segment, concatenates and rewrites them in memory: with the
# shipped bound (100k rows a segment, 200k an input) one tenant's whole partition at the
# large bench corpus, which put the server's peak at twice its steady size (2,764 against
# 1,462 MiB). Smaller segments bound that copy; the file count that forces a merge of full
# segments grows so that it still comes at the shipped 3.2M rows a partition.
SEGMENT_ROWS = 25_000
DATA_FILES = 128
MAX_MESSAGE_BYTES = 256 << 20  # as Milvus Lite's own server (and Milvus standalone)
# The stack's own clients hold a few channels each; the rest is for CLIs and tools.
MAX_CONNECTIONS = 256
# Every client connection is a file descriptor. The restart soak's clients, connecting in a
# tight loop to a server busy loading, ran it out of its 20,000 ("[Errno 24] Failed to open
# local file .../delta_*.parquet"); from then on it could not open its own data files.
OPEN_FILES = 1 << 20


def bound_compaction() -> None:
    """Milvus Lite's compaction reads these module globals at each run (its only readers)."""
    from milvus_lite.engine import compaction

    compaction.MAX_SEGMENT_ROWS = SEGMENT_ROWS
    compaction.MAX_DATA_FILES = DATA_FILES


def raise_open_files(wanted: int = OPEN_FILES) -> int:
    """The soft limit on open files raised to ``wanted`` (the hard limit too where the
    process may raise it): the limit it ends at."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        with contextlib.suppress(ValueError, OSError):  # unprivileged: the hard limit stays
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return int(soft)


def build_server(db: object, max_workers: int) -> grpc.Server:
    """Milvus Lite's gRPC server, with its message bounds, and at most
    MAX_CONNECTIONS connections: past them the server closes a new one at once."""
    import grpc
    from milvus_lite.adapter.grpc.servicer import MilvusServicer
    from pymilvus.grpc_gen import milvus_pb2_grpc

    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_allowed_incoming_connections", MAX_CONNECTIONS),
            # gRPC binds with SO_REUSEPORT by default: a second server on a taken port started
            # and the kernel split connections between the two (a probe of a stopped Milvus
            # was answered by the other). A taken port is an error instead.
            ("grpc.so_reuseport", 0),
        ],
    )
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(MilvusServicer(db), server)
    return server


def open_collections(db: Any) -> int:
    """Open (and so recover) every collection now, before anyone can connect, and make any
    later open one at a time.

    Milvus Lite opens a collection at its first request, and its ``get_collection`` has no
    lock: requests that arrive together while a collection recovers (seconds to minutes with
    thousands of delta files) each build their own instance over the same files, each with
    a WAL and a background compactor. One's recovery can delete as an orphan the data file
    another has just flushed and not yet committed to the manifest: rows gone after a start
    that looked clean. Four threads asking at once got four instances."""
    lock = threading.Lock()
    get_collection = db.get_collection

    def one_at_a_time(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return get_collection(*args, **kwargs)

    db.get_collection = one_at_a_time
    names = list(db.list_collections())
    for name in names:
        try:
            db.get_collection(name)
        except Exception as exc:  # damaged: kept aside, and the vector tier rebuilt without it
            aside = set_aside(db, name)
            log.error("event=milvus_collection_set_aside collection=%s to=%s error=%s: %s", name,
                      aside, type(exc).__name__, str(exc)[:300])  # fmt: skip
    return len(names)


def durable_index_sidecars() -> None:
    """Milvus Lite keeps each segment's vector index in a sidecar file, written in place and
    read back at every load: a kill mid-write (a chaos run's) left a truncated file, and
    from then on every ``load_collection`` failed with "No data left in file", so the query
    service could not start. The index is derived from the segment's own vectors: a sidecar
    is now written to a temporary name and renamed, and one that cannot be read is removed
    and built again."""
    from milvus_lite.index.brute_force import BruteForceIndex
    from milvus_lite.storage.segment import Segment

    kinds: list[Any] = [BruteForceIndex]
    with contextlib.suppress(ImportError):  # faiss is optional in Milvus Lite
        from milvus_lite.index.faiss_hnsw import FaissHnswIndex

        kinds.append(FaissHnswIndex)
    for kind in kinds:
        if getattr(kind.save, "_renamed", False):
            continue
        kind.save = _renamed_save(kind.save)
    original = Segment.build_or_load_index
    if getattr(original, "_rebuilds", False):
        return

    def build_or_load_index(self: Any, spec: Any, index_dir: str) -> None:
        try:
            original(self, spec, index_dir)
        except Exception as exc:
            path = Path(self.index_file_path(index_dir, spec.index_type, spec.field_name))
            if not path.is_file():
                raise  # a build that failed: nothing read to blame
            path.unlink()
            log.error("event=milvus_index_rebuilt path=%s error=%s: %s", path,
                      type(exc).__name__, str(exc)[:200])  # fmt: skip
            original(self, spec, index_dir)

    build_or_load_index._rebuilds = True  # type: ignore[attr-defined]
    Segment.build_or_load_index = build_or_load_index


def _renamed_save(save: Any) -> Any:
    def renamed(self: Any, path: str) -> None:
        partial = f"{path}.partial"
        save(self, partial)
        Path(partial).replace(path)

    renamed._renamed = True  # type: ignore[attr-defined]
    return renamed


def set_aside(db: Any, name: str) -> Path:
    """A collection Milvus Lite cannot open, moved (never deleted) out of its collections into
    ``damaged/``: the stack then starts with the collection missing, which the client creates
    again and the outbox fills, as after a lost data dir."""
    aside = Path(db.data_dir) / "damaged" / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    Path(db._collection_dir(name)).rename(aside)
    return aside


def serve(data_dir: str, address: str, max_workers: int = 10,
          rewrite_delta_files: int = DELTA_FILES_BOUND) -> None:  # fmt: skip
    """Milvus Lite on ``address`` (``host:port``, or ``unix:PATH``, replaced if a dead server
    left it): until the process is signalled, as ``milvus-lite server``. A collection with
    more than ``rewrite_delta_files`` delta files (0: no bound) is rewritten first."""
    from milvus_lite.db import MilvusLite

    db = MilvusLite(data_dir)
    compact_delete_logs(db, Path(data_dir), rewrite_delta_files)
    open_collections(db)
    server = build_server(db, max_workers)
    previous = os.umask(0o077)  # a socket is created 0700: connect needs write permission
    try:
        if address.startswith("unix:"):
            with contextlib.suppress(FileNotFoundError):
                Path(address.removeprefix("unix:")).unlink()  # nothing listens on it any more
        try:
            bound = server.add_insecure_port(address)
        except RuntimeError as exc:  # grpc's way of saying the bind failed
            raise OSError(f"cannot listen on {address} (taken?): {exc}") from exc
        if not bound and not address.startswith("unix:"):
            raise OSError(f"cannot listen on {address}")
        server.start()
    finally:
        os.umask(previous)
    print(f"MilvusLite gRPC server listening on {address} (data_dir={data_dir!r})", flush=True)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop(grace=5)
        db.close()


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m patchstream.embedded.milvus_server")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--listen", required=True, help="host:port or unix:PATH")
    parser.add_argument("--max-workers", type=int, default=10)
    parser.add_argument(
        "--rewrite-delta-files",
        type=int,
        default=DELTA_FILES_BOUND,
        help="rewrite a collection with more delta files at start (0: never)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    raise_open_files()
    bound_compaction()
    durable_index_sidecars()
    start_heap_trim()
    args = _arguments(argv)
    configure_logging()
    for chatty in ("milvus_lite", "faiss"):  # compaction and library loading, at INFO
        logging.getLogger(chatty).setLevel(logging.WARNING)
    # pymilvus's query iterator asks for AllocTimestamp, which Milvus Lite does not have (the
    # client falls back on its own clock): a traceback per iterator otherwise.
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
    serve(args.data_dir, args.listen, args.max_workers, args.rewrite_delta_files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
