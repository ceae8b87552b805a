"""Restarts of the whole embedded stack on its own data, with clients knocking at every store.

Each round changes the corpus (edits, deletes, adds) and indexes it; indexes a branch overlay
over ``main`` and drops it; then, a random moment into a second index, stops the whole stack
(SIGTERM to ``up`` on odd rounds, SIGKILL of ``up`` and every child at once on even ones) and
starts it again on the same data dir while threads connect to FalkorDB, Milvus and the broker
in a tight loop (FalkorDB's with ``HELLO 3 AUTH``, as the stack's clients do). The round
passes when the stack came up, the index completes, both stores equal a clean rebuild of the
same files, and the dropped overlay holds nothing in either store.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from patchstream.config.stack_addresses import milvus_socket_path
from patchstream.embedded.services import falkordb_password, port_is_open
from patchstream.indexing.run import index_directory
from patchstream.stores.overlay_service import OverlayService
from patchstream.testing.faults import FAULT_TENANT, REPO, FaultSoak, RoundResult, _complete


@dataclass
class RestartResult:
    round: int
    hard: bool  # SIGKILL of every process (else SIGTERM to `up`)
    up_s: float  # stopped -> every tier answering (the index completed again)
    knocks: int  # client connections tried during the start
    resurrected: int  # files of the dropped overlay held again by either store
    equal: RoundResult
    # An unequal round: what the stores lacked at once (``behind``), and the seconds until
    # they equalled the rebuild after all (None: not within the wait), so a report tells a
    # late store from a lost write.
    behind: str = ""
    settled_s: float | None = None


class StoreKnocker:
    """Threads that connect to each store in a tight loop until stopped: at its port, or at
    its Unix socket (as a client of the same user can). Each knock opens what a client opens
    first: FalkorDB's ``HELLO 3 AUTH``, Milvus's HTTP/2 preface (its answer read), so the
    loop runs at the pace of the store's answers, as real clients do. A bare connect and
    hang-up on a Unix socket would only fill its accept queue, which refuses every client
    for as long as that lasts (measured in ``docs/architecture/durability.md``)."""

    def __init__(self, ports: dict[str, int | Path], falkordb_password: str) -> None:
        secret = falkordb_password
        self.hello = (f"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n"
                      f"${len(secret)}\r\n{secret}\r\n").encode()  # fmt: skip
        self.ports = ports
        self.stop = threading.Event()
        self.knocks = 0
        self.threads = [threading.Thread(target=self._knock, args=(name, port), daemon=True)
                        for name, port in ports.items()]  # fmt: skip

    def __enter__(self) -> StoreKnocker:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _knock(self, name: str, where: int | Path) -> None:
        first = {"falkordb": self.hello, "milvus": HTTP2_PREFACE}.get(name)
        if name == "milvus" and isinstance(where, int):
            first = None  # over TCP the kernel paces a flood (its SYN queue): bare connects
        while not self.stop.is_set():
            self.knocks += 1
            try:
                with _connect(where) as sock:
                    if first is not None:
                        sock.sendall(first)
                        sock.recv(64)
            except OSError:
                time.sleep(0.002)  # refused: the store is not listening yet


# A gRPC client's first bytes: the HTTP/2 connection preface and an empty SETTINGS frame.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _connect(where: int | Path) -> socket.socket:
    if isinstance(where, int):
        return socket.create_connection(("127.0.0.1", where), timeout=1)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1)
    try:
        sock.connect(str(where))
    except OSError:
        sock.close()
        raise
    return sock


class RestartSoak(FaultSoak):
    def restart_round(self, hard: bool | None = None, timeout_s: float = 600.0) -> RestartResult:
        self.rounds += 1
        if self.rounds > 1:
            self.mutate()
        hard = self.rounds % 2 == 0 if hard is None else hard
        outcome: dict[str, object] = {}
        self._index(FAULT_TENANT, timeout_s, outcome)
        if not _complete(outcome.get("summary")):
            raise RuntimeError(f"round {self.rounds}: the first index failed: {outcome}")
        overlay = f"feat{self.rounds}"
        self._overlay_then_drop(overlay, timeout_s)
        self.mutate()  # a second burst, in flight when the stack stops
        # Cut short by the stop: it gives up soon after (what it published is acknowledged).
        index = threading.Thread(target=self._index, args=(FAULT_TENANT, 10.0, {}), daemon=True)
        index.start()
        time.sleep(self.rng.uniform(0.0, 1.5))
        stopped = time.monotonic()
        self.stop_stack(hard)
        index.join(60)
        embedded = self.settings.embedded
        milvus = embedded.milvus_port if not embedded.milvus_socket else milvus_socket_path(
            Path(embedded.data_dir))  # fmt: skip
        ports = {"falkordb": embedded.falkordb_port, "milvus": milvus, "tansu": embedded.kafka_port}
        password = falkordb_password(Path(embedded.data_dir).resolve() / "falkordb")
        with StoreKnocker(ports, password) as knocker:
            try:
                self.start_up(timeout=timeout_s)
            except RuntimeError as exc:  # what `up` said is the finding
                raise RuntimeError(f"round {self.rounds}: {exc}\n{self.log_tails(40)}") from exc
        outcome = {}
        for _ in range(3):  # what the stop cut short is published again, as a user would
            self._index(FAULT_TENANT, timeout_s, outcome)
            if _complete(outcome.get("summary")):
                break
        else:
            raise RuntimeError(f"round {self.rounds}: no index completed after the restart: "
                               f"{outcome}\n{self.log_tails()}")  # fmt: skip
        up_s = time.monotonic() - stopped
        resurrected = self._held(overlay)
        clean = f"tclean{self.rounds}{os.urandom(2).hex()}"
        outcome = {}
        self._index(clean, timeout_s, outcome)
        if not _complete(outcome.get("summary")):
            raise RuntimeError(f"round {self.rounds}: the clean rebuild failed: {outcome}")
        equal = self.compare(clean)
        behind, settled_s = "", None
        if not equal.equal:
            behind, settled_s = self.behind(), self._settled(clean)
        self._drop_rebuild(clean)
        return RestartResult(self.rounds, hard, round(up_s, 2), knocker.knocks, resurrected,
                             equal, behind, settled_s)  # fmt: skip

    def _settled(self, clean: str, wait_s: float = 180.0) -> float | None:
        """Seconds until the stores equal the clean rebuild after all, or None."""
        began = time.monotonic()
        while time.monotonic() - began < wait_s:
            time.sleep(5)
            with contextlib.suppress(Exception):  # a store still not answering: wait on
                if self.compare(clean).equal:
                    return round(time.monotonic() - began, 1)
        return None

    def _drop_rebuild(self, clean: str) -> None:
        """The clean rebuild is dropped once compared (fenced, so no replay brings it back):
        the stores stay the size of one corpus however many rounds run."""
        graph, vectors = self._stores()
        try:
            OverlayService(graph, vectors, ttl_s=3600).drop_ref(clean, REPO, "main")
        finally:
            graph.close()
            vectors.close()

    def restart_time(self, hard: bool, timeout_s: float = 900.0) -> float:
        """Seconds from the stop to every tier answering again: the stack stopped (SIGTERM to
        ``up``, or SIGKILL of every process) and started on its own data, until the graph
        holds the indexed files and a search through the query service finds code."""
        stopped = time.monotonic()
        self.stop_stack(hard)
        self.start_up(timeout=timeout_s)
        deadline = stopped + timeout_s
        while time.monotonic() < deadline:
            if self._answering():
                return time.monotonic() - stopped
            time.sleep(0.2)
        raise RuntimeError(f"the stack did not answer within {timeout_s:.0f}s\n{self.log_tails()}")

    def _answering(self) -> bool:
        """The graph and the vectors hold the indexed branch, and the query service and the
        gateway answer their health checks."""
        import httpx

        try:
            graph, vectors = self._stores()
            try:
                if not graph.file_hashes(FAULT_TENANT, REPO, "main"):
                    return False
                if not vectors.file_hashes(FAULT_TENANT, REPO, "main"):
                    return False
            finally:
                graph.close()
                vectors.close()
            for port in (self.settings.query.port, self.settings.gateway.port):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code != 200:
                    return False
            return True
        except Exception:
            return False

    def stop_stack(self, hard: bool) -> None:
        """SIGTERM to ``up`` (it stops its children in order), or SIGKILL of ``up`` and every
        child at once, as a power cut would (children may still be exiting at the next start)."""
        assert self.up is not None
        if not hard:
            self.stop_up()
            return
        for pid in [self.up.pid, *self.children()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.up.wait(30)
        self.up = None
        # The next start is seen as up when the query and gateway ports answer: a port still
        # held by a dying child would pass that check before the new stack started at all.
        ports = (self.settings.query.port, self.settings.gateway.port)
        deadline = time.monotonic() + 30.0
        while any(port_is_open("127.0.0.1", p) for p in ports) and time.monotonic() < deadline:
            time.sleep(0.1)

    def _overlay_then_drop(self, ref: str, timeout_s: float) -> None:
        branch = self.workdir / "branch"
        shutil.rmtree(branch, ignore_errors=True)
        shutil.copytree(self.source, branch)
        for path in sorted(branch.rglob("mod*.py"))[:3]:
            path.write_text(path.read_text() + f"\n\ndef only_on_{ref}():\n    return 1\n")
        summary = asyncio.run(index_directory(
            self.client_settings(), branch, repo=REPO, tenant=FAULT_TENANT, ref=ref,
            base="main", timeout_s=timeout_s, progress=False, commits=0))  # fmt: skip
        if not _complete(summary):
            raise RuntimeError(f"round {self.rounds}: the overlay's index failed: {summary}")
        graph, vectors = self._stores()
        try:
            if not OverlayService(graph, vectors, ttl_s=3600).drop(FAULT_TENANT, REPO, ref):
                raise RuntimeError(f"round {self.rounds}: {ref} was not an overlay to drop")
        finally:
            graph.close()
            vectors.close()

    def _held(self, ref: str) -> int:
        graph, vectors = self._stores()
        try:
            return len(graph.file_hashes(FAULT_TENANT, REPO, ref)) + len(
                vectors.file_hashes(FAULT_TENANT, REPO, ref)
            )
        finally:
            graph.close()
            vectors.close()
