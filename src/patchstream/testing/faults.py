"""Faults at random moments on the real embedded stack, and a check against a clean rebuild.

Each round changes a corpus (some files edited, some deleted, some added), starts indexing it
into tenant ``tfault``, kills one process with SIGKILL at a random moment (the broker, a parse
worker, a sink, or ``patchstream up`` itself, which is then started again on the same data),
waits until the index completes (running it again if the fault made it fail, as a user
would), indexes the same files into a fresh tenant on the same stack without faults, and
compares the two: files, symbols, edges and chunks, with counts (a duplicate shows there).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from patchstream.config.settings import (
    EmbeddedSettings,
    GatewaySettings,
    KafkaSettings,
    PipelineSettings,
    QuerySettings,
    Settings,
)
from patchstream.embedded.child_settings import settings_environment, with_embedded_addresses
from patchstream.embedded.lifetime import with_parent_lifetime
from patchstream.embedded.services import free_port, port_is_open
from patchstream.errors import StoreUnavailable
from patchstream.indexing.run import IndexSummary, index_directory
from patchstream.parsing.hashing import hash_bytes
from patchstream.producers.outbox import Outbox, outbox_path
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.testing.soak_reports import bus_state, differing_files, normalized

VICTIMS = ("tansu", "parse", "graph-sink", "vector-sink", "up")
# Words of each victim's command line (argv elements) that tell it apart.
_ARGV_WORDS = {"tansu": ["broker", "--storage-engine"], "parse": ["worker"],
               "graph-sink": ["sink", "graph"], "vector-sink": ["sink", "vector"]}  # fmt: skip
FAULT_TENANT = "tfault"
REPO = "soak"


@dataclass
class RoundResult:
    round: int
    victim: str
    kill_after_s: float
    index_attempts: int
    recovery_s: float
    files: int
    lost: int  # files whose content the fault tenant does not hold (either tier)
    duplicated: int  # symbols, edges or chunks the fault tenant holds more than the clean one
    equal: bool
    differences: list[str] = field(default_factory=list)
    leftover_rows: int = 0  # extra chunk rows, when they are the only difference
    leftovers_waited_s: float = 0.0  # how long the judge waited for the audit to delete them


def synthetic_corpus(root: Path, files: int, seed: int = 0) -> None:
    """``files`` Python modules in packages of 50, each calling into two other modules."""
    rng = random.Random(seed)
    for i in range(files):
        package = root / f"pkg{i // 50}"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
        calls = [rng.randrange(files) for _ in range(2)]
        imports = "\n".join(f"from pkg{j // 50}.mod{j} import helper{j}" for j in calls)
        body = "\n".join(f"    total += helper{j}(total)" for j in calls)
        (package / f"mod{i}.py").write_text(
            f'"""Module {i}."""\n{imports}\n\n\ndef helper{i}(x):\n    return x + {i}\n\n\n'
            f"class Thing{i}:\n    def run(self, total):\n{body}\n        return total\n"
        )


class FaultSoak:
    """One embedded stack under ``workdir`` (ports of its own), driven round by round."""

    def __init__(self, workdir: Path, corpus: Path, seed: int = 0, parse_workers: int = 2):
        self.workdir = workdir
        self.source = workdir / "source"
        self.rng = random.Random(seed)
        if self.source.exists():
            shutil.rmtree(self.source)
        shutil.copytree(corpus, self.source)
        self.settings = Settings(
            embedded=EmbeddedSettings(data_dir=str(workdir / "data"), kafka_port=free_port(),
                                      falkordb_port=free_port(), milvus_port=free_port(),
                                      metrics_port=0, parse_workers=parse_workers,
                                      reconcile_interval_s=0, consumer_stall_s=60),
            kafka=KafkaSettings(topic_prefix=f"soak{uuid.uuid4().hex[:6]}.", partitions=4),
            pipeline=PipelineSettings(sink_batch_wait_ms=50, retry_backoff_s=0.2),
            query=QuerySettings(port=free_port()),
            gateway=GatewaySettings(port=free_port()),
        )  # fmt: skip
        self.up: subprocess.Popen[bytes] | None = None
        # Set while ``up`` starts: a store killed then fails the start as it should (``up``
        # says which one and exits), so a fault injector waits rather than fail the harness.
        self.starting = threading.Event()
        self.rounds = 0
        self.mutations = 0  # names the added files: a round may mutate twice
        self.cold_index_s = 4.0  # a guess until the first clean rebuild has measured it

    # -- the stack ------------------------------------------------------------------------

    def __enter__(self) -> FaultSoak:
        self.start_up()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_up()

    def start_up(self, timeout: float = 180.0) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
        env.update(settings_environment(self.settings))
        log = self.workdir / "up.log"
        self.starting.set()
        try:
            self._start_up(env, log, timeout)
        finally:
            self.starting.clear()

    def _start_up(self, env: dict[str, str], log: Path, timeout: float) -> None:
        with log.open("ab") as out:
            # It stops with the harness, however that ends (an interrupted soak left stacks).
            argv = with_parent_lifetime([sys.executable, "-m", "patchstream.cli.main", "up"])
            self.up = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        ports = (self.settings.query.port, self.settings.gateway.port)
        while not all(port_is_open("127.0.0.1", p) for p in ports):
            if self.up.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"patchstream up did not start; see {log}")
            time.sleep(0.2)

    def stop_up(self) -> None:
        if self.up is not None and self.up.poll() is None:
            self.up.send_signal(signal.SIGTERM)
            try:
                self.up.wait(90)
            except subprocess.TimeoutExpired:
                self.up.kill()
        self.up = None

    def client_settings(self) -> Settings:
        return with_embedded_addresses(self.settings)

    def children(self) -> dict[int, list[str]]:
        """pid -> argv of every process ``up`` started."""
        assert self.up is not None
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                parent = int(stat.rsplit(")", 1)[1].split()[1])
                if parent == self.up.pid:
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                    found[int(entry.name)] = [a.decode(errors="replace") for a in argv if a]
        return found

    def victim_pid(self, victim: str) -> int:
        assert self.up is not None
        if victim == "up":
            return self.up.pid
        wanted = _ARGV_WORDS[victim]
        for pid, argv in sorted(self.children().items()):
            if all(word in argv for word in wanted):
                return pid
        raise RuntimeError(f"no running {victim} under patchstream up")

    def kill(self, victim: str) -> None:
        pid = self.victim_pid(victim)
        children = set(self.children()) if victim == "up" else set()
        os.kill(pid, signal.SIGKILL)
        if victim == "up":
            self.restart_up(children)
        # any other: the supervisor restarts it

    def restart_up(self, children: set[int], killed: int | None = None) -> None:
        """After ``up`` was killed: wait for it and its ``children`` to be gone, and start it
        again on the same data. Call it from the thread that started the harness: ``up``
        gets its parent-death signal when the *thread* that started it ends. ``killed``: the
        pid that was killed, when another thread did it; nothing to do when that ``up`` was
        already replaced (a kill that landed while an earlier one was being restarted: the
        restart's own retry started the ``up`` now running)."""
        assert self.up is not None
        if killed is not None and self.up.pid != killed:
            return
        self.up.wait(30)
        deadline = time.monotonic() + 60
        while any(Path(f"/proc/{p}").exists() and not _zombie(p) for p in children):
            if time.monotonic() > deadline:
                raise RuntimeError("children of the killed `up` are still running")
            time.sleep(0.1)
        for attempt in (1, 2, 3):  # a loaded machine: a start may fail on a slow broker
            try:
                self.start_up()
                return
            except RuntimeError:
                if attempt == 3:
                    raise
                self.stop_up()  # one still starting holds the data dir: it goes first

    # -- one round ------------------------------------------------------------------------

    def mutate(self) -> None:
        """Edit 20% of the files, delete 1%, add 1%: a mass refactor's worth of work for the
        fault to land in (the first round indexes the corpus as it is)."""
        self.mutations += 1
        files = sorted(p for p in self.source.rglob("*.py") if p.name != "__init__.py")
        count = max(1, len(files) // 100)
        for path in self.rng.sample(files, min(len(files), count * 20)):
            path.write_text(path.read_text() + f"\n\ndef edited_{self.rounds}():\n    return 1\n")
        for path in self.rng.sample(files, count):
            path.unlink()
        for i in range(count):  # as many added as deleted: the corpus keeps its size
            (self.source / f"added_{self.mutations}_{i}.py").write_text(
                f"def added_{self.mutations}_{i}():\n    return {i}\n"
            )

    def round(self, victim: str | None = None, timeout_s: float = 600.0) -> RoundResult:
        self.rounds += 1
        if self.rounds > 1:
            self.mutate()
        victim = victim or self.rng.choice(VICTIMS)
        # Within the index's expected run: a cold one at first, a fifth of it afterwards.
        expected = self.cold_index_s if self.rounds == 1 else self.cold_index_s * 0.22
        kill_after = round(self.rng.uniform(0.1, max(0.3, expected * 0.8)), 2)
        started = time.monotonic()
        outcome: dict[str, object] = {}
        # A third of the budget per attempt: an attempt the fault stalled is run again (as a
        # user would), which republishes whatever the stores still lack.
        attempt_s = timeout_s / 3
        worker = threading.Thread(target=self._index, args=(FAULT_TENANT, attempt_s, outcome),
                                  daemon=True)  # fmt: skip
        worker.start()
        time.sleep(kill_after)  # the fault lands at a random moment of the index
        self.kill(victim)
        worker.join(timeout_s)
        attempts = 1
        while not _complete(outcome.get("summary")):
            if attempts >= 3 or time.monotonic() - started > timeout_s:
                # What tells the cause first (CI shows a failure's head and tail).
                raise RuntimeError(f"the index did not complete after {victim}: {outcome}\n"
                                   f"{self.behind()}\n{self.bus_state()}\n"
                                   f"{self.log_tails()}")  # fmt: skip
            attempts += 1  # the fault failed this run (say, the broker went mid-publish)
            self._index(FAULT_TENANT, attempt_s, outcome)
        recovery = time.monotonic() - started
        result = self.rebuild_and_compare(timeout_s)
        result.round, result.victim, result.kill_after_s = self.rounds, victim, kill_after
        result.index_attempts, result.recovery_s = attempts, round(recovery, 2)
        return result

    def index_once(self, timeout_s: float = 600.0) -> None:
        """The corpus as it is, indexed into the fault tenant with no fault: what a load
        starts from."""
        outcome: dict[str, object] = {}
        self._index(FAULT_TENANT, timeout_s, outcome)
        if not _complete(outcome.get("summary")):
            raise RuntimeError(f"the first index did not complete: {outcome}")

    def rebuild_and_compare(
        self, timeout_s: float = 600.0, leftovers_s: float = 0.0
    ) -> RoundResult:
        """The working copy indexed into a fresh tenant with no fault, and the fault tenant
        compared with it. With ``leftovers_s``, extra chunk rows that are the only difference
        are compared again for that long: rows a killed sink or Milvus left under no record
        are the vector audit's to delete (a pass after the restart, confirmed 30 s later), and
        the search copy never serves them meanwhile (it reads the rows records list)."""
        clean = f"tclean{self.rounds}{uuid.uuid4().hex[:4]}"
        clean_started = time.monotonic()
        outcome: dict[str, object] = {}
        for _ in range(3):  # the supervisor may still be restarting what a late kill hit
            self._index(clean, timeout_s, outcome)
            if _complete(outcome.get("summary")):
                break
        else:
            raise RuntimeError(f"the clean rebuild did not complete: {outcome}")
        self.cold_index_s = time.monotonic() - clean_started
        result, started = self.compare(clean), time.monotonic()
        while result.leftover_rows and time.monotonic() - started < leftovers_s:
            time.sleep(5.0)
            result = self.compare(clean)
        result.leftovers_waited_s = round(time.monotonic() - started, 1) if leftovers_s else 0.0
        return result

    def log_tails(self, lines: int = 12) -> str:
        """The last lines of every child's log: what a failed round leaves to read in CI."""
        out = []
        for log in sorted((self.workdir / "data" / "logs").glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(tail))
        up = self.workdir / "up.log"
        if up.exists():
            out.append(
                "--- up.log\n" + "\n".join(up.read_text(errors="replace").splitlines()[-lines:])
            )
        return "\n".join(out)

    def bus_state(self) -> str:
        """Lag per partition of each consumer group, and each group's state and members: what
        tells a stalled partition from a slow one when a round fails in CI."""
        try:
            return asyncio.run(asyncio.wait_for(bus_state(self.client_settings()), 30))
        except Exception as exc:  # the broker itself may be what failed
            return f"--- bus state unavailable: {type(exc).__name__}: {exc}"

    def behind(self, shown: int = 6) -> str:
        """The files a tier lacks, and what each tier (hash@version) and the outbox (versions,
        ``*`` pending) hold of them: the first lines of a failed round's message in CI."""
        expected = self._source_hashes()
        try:
            graph, vectors = self._stores(wait_s=30)
        except Exception as exc:
            return f"--- behind: stores unavailable: {type(exc).__name__}: {exc}"
        try:
            hashes = [graph.file_hashes(FAULT_TENANT, REPO, "main"),
                      vectors.file_hashes(FAULT_TENANT, REPO, "main")]  # fmt: skip
            versions = [graph.file_versions(FAULT_TENANT, REPO, "main"),
                        vectors.file_versions(FAULT_TENANT, REPO, "main")]  # fmt: skip
        finally:
            graph.close()
            vectors.close()
        behind = sorted(path for path, digest in expected.items()
                        if any(tier.get(path) != digest for tier in hashes))  # fmt: skip
        outbox = Outbox(outbox_path(self.client_settings()))
        try:
            entries = outbox.pending(retained=True)
        finally:
            outbox.close()
        lines = [f"--- behind: {len(behind)} files; outbox {len(entries)} entries, "
                 f"{sum(not e.applied for e in entries)} pending"]  # fmt: skip
        for path in behind[:shown]:
            tiers = [f"{name} {(h.get(path) or '-')[:8]}@{v.get(path)}" for name, h, v
                     in zip(("graph", "vectors"), hashes, versions, strict=True)]  # fmt: skip
            held = [f"{e.version}{'' if e.applied else '*'}" for e in entries
                    if e.tenant == FAULT_TENANT and e.path == path]  # fmt: skip
            lines.append(f"{path}: source {expected[path][:8]}; {'; '.join(tiers)}; "
                         f"outbox {', '.join(held) or '-'}")  # fmt: skip
        return "\n".join(lines)

    def _source_hashes(self) -> dict[str, str]:
        """Path -> content hash of every module of the corpus as it is now."""
        return {str(p.relative_to(self.source)): hash_bytes(p.read_bytes())
                for p in self.source.rglob("*.py")}  # fmt: skip

    def _index(self, tenant: str, timeout_s: float, outcome: dict[str, object]) -> None:
        try:
            outcome["summary"] = asyncio.run(index_directory(
                self.client_settings(), self.source, repo=REPO, tenant=tenant,
                timeout_s=timeout_s, progress=False, commits=0))  # fmt: skip
        except BaseException as exc:  # the fault may fail this run; the caller runs it again
            outcome["summary"] = exc

    def _stores(self, wait_s: float = 600.0) -> tuple[CypherGraphStore, MilvusVectorStore]:
        """Both stores, waited for as a user would while one is still loading."""
        settings = self.client_settings()
        deadline = time.monotonic() + wait_s
        while True:
            graph = open_graph_store(settings)
            try:
                return graph, open_vector_store(settings)
            except StoreUnavailable:
                graph.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)

    def compare(self, clean: str) -> RoundResult:
        expected = self._source_hashes()
        graph, vectors = self._stores()
        try:
            held = [graph.file_hashes(FAULT_TENANT, REPO, "main"),
                    vectors.file_hashes(FAULT_TENANT, REPO, "main")]  # fmt: skip
            lost = sum(1 for path, digest in expected.items()
                       if any(tier.get(path) != digest for tier in held))  # fmt: skip
            faulty = normalized(graph.snapshot(FAULT_TENANT), vectors.rows(FAULT_TENANT),
                                 FAULT_TENANT)  # fmt: skip
            rebuilt = normalized(graph.snapshot(clean), vectors.rows(clean), clean)
            counts = [graph.scope_counts(t, REPO, "main") for t in (FAULT_TENANT, clean)]
        finally:
            graph.close()
            vectors.close()
        differences, unequal = [], {}
        for name, mine, theirs in zip(("symbols", "edges", "chunks"), faulty, rebuilt,
                                      strict=True):  # fmt: skip
            if mine != theirs:
                unequal[name] = (len(mine - theirs), len(theirs - mine))
                differences.append(f"{name}: {len(mine - theirs)} extra, "
                                   f"{len(theirs - mine)} missing"
                                   f"{differing_files(mine - theirs, theirs - mine)}")  # fmt: skip
        duplicated = sum(max(0, a - b) for a, b in zip(*counts, strict=True))
        if extra_live := set(held[0]) - set(expected):
            differences.append(f"files deleted but still live: {len(extra_live)}")
        extra, missing = unequal.get("chunks", (0, 0))
        # Extra chunk rows and nothing else (no other store, file or count differs).
        leftovers = extra if len(differences) == 1 == len(unequal) and not missing else 0
        return RoundResult(0, "", 0.0, 0, 0.0, len(expected), lost, duplicated,
                           not differences and not lost and not duplicated, differences,
                           0 if lost or duplicated else leftovers)  # fmt: skip


def _complete(summary: object) -> bool:
    return isinstance(summary, IndexSummary) and summary.complete


def _zombie(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return True
