"""Faults under sustained load: agents write, pushes arrive and queries run while processes of
the stack are killed and paused at random; afterwards nothing acknowledged is lost, nothing
deleted comes back, and the stores equal a clean rebuild of the last acknowledged tree.

Every write goes through the gateway over HTTP, as an agent's does. An agent owns its files
(one writer per path, so the last acknowledged write of a file is its newest version) and
retries a write until the gateway acknowledges it, as an agent would: a write whose answer was
lost may have been published, and only the retry's newer version is the file's truth. The
working copy (``FaultSoak.source``) changes only once a write is acknowledged, so at any
moment it is the last acknowledged state. Queries run beside them and are counted by outcome:
answered (every hit a file the tree holds or held within the last minute), behind (a hit on a
file deleted longer ago, while the stack's freshness said it was at least that far behind: an
old answer that says it is old), stale (such a hit with no lag declared: a wrong answer), a
retryable error (the connection refused or reset, a timeout, 502/503/504), or an unclear error
(anything else). Each stale answer is kept with its path, age and the freshness read beside
it, so a failed run says where to look.

The scheduler SIGKILLs a random process of the stack every ``kill_every_s`` (any of
``VICTIMS``; ``up`` itself is started again on the same data) and, every ``pause_every_s``,
stops one with SIGSTOP for ``pause_s``. Filling the disk under the data dir is not among the
faults: it needs a mount this harness cannot make without privileges.
"""

from __future__ import annotations

import contextlib
import os
import queue
import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from patchstream.client import PatchClient, PatchClientError
from patchstream.config.settings import GatewaySettings, QuerySettings
from patchstream.parsing.hashing import hash_bytes
from patchstream.producers.claude_hook import gateway_url
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.testing.faults import _ARGV_WORDS, FAULT_TENANT, REPO, FaultSoak

# Every process `up` runs, and `up` itself.
VICTIMS = ("tansu", "falkordb", "milvus", "parse", "graph-sink", "vector-sink", "query",
           "gateway", "up")  # fmt: skip
_MORE_ARGV_WORDS = {"falkordb": ["redis-server"], "milvus": ["patchstream.embedded.milvus_server"],
                    "query": ["query-service"], "gateway": ["gateway"]}  # fmt: skip
KEY = "chaos-key"
_RETRYABLE = {502, 503, 504}
LEFTOVERS_S = 150.0  # the vector audit's pass and confirmation after a restart, and margin
_STALE_AFTER_S = 60.0  # a hit on a file deleted this long ago is a wrong answer
_LAG_READ_S = 20.0  # how long a failing freshness read is tried again (a store restarting)


@dataclass
class ChaosReport:
    seconds: float = 0.0
    kills: Counter[str] = field(default_factory=Counter)
    pauses: Counter[str] = field(default_factory=Counter)
    writes: int = 0  # acknowledged upserts and deletes
    deletes: int = 0
    retries: int = 0  # attempts the gateway did not acknowledge (each retried)
    queries: Counter[str] = field(default_factory=Counter)
    checkpoints: list[float] = field(default_factory=list)  # seconds each took to converge
    drain_s: float = 0.0
    max_lag_s: float = 0.0
    final_lag_s: float | None = None
    lost: int = 0
    resurrected: int = 0
    duplicated: int = 0
    equal: bool = False
    differences: list[str] = field(default_factory=list)
    leftovers_waited_s: float = 0.0  # extra chunk rows under no record: the audit's
    stale_answers: list[str] = field(default_factory=list)  # what each stale answer held
    # Kills, pauses and query outcomes by second of the run, runs of one outcome folded:
    # where a run answered too few queries, it says what was down when.
    timeline: list[str] = field(default_factory=list)

    def passed(self) -> bool:
        return (self.equal and not self.lost and not self.resurrected
                and not self.queries["stale"] and not self.queries["unclear"])  # fmt: skip


class ChaosRun:
    """Load and faults on one ``FaultSoak`` stack, whose settings it gives a key of its own."""

    def __init__(
        self, soak: FaultSoak, seed: int = 7, writers: int = 4, write_rate: float = 4.0,
        push_every_s: float = 15.0, push_files: int = 8, query_rate: float = 2.0,
        kill_every_s: tuple[float, float] = (20.0, 60.0), pause_every_s: float = 180.0,
        pause_s: tuple[float, float] = (10.0, 30.0),
    ) -> None:  # fmt: skip
        self.soak = soak
        self.rng = random.Random(seed)
        self.writers, self.write_rate = writers, write_rate
        self.push_every_s, self.push_files = push_every_s, push_files
        self.query_rate = query_rate
        self.kill_every_s, self.pause_every_s, self.pause_s = kill_every_s, pause_every_s, pause_s
        self.report = ChaosReport()
        self.stop = threading.Event()
        self.hold = threading.Event()  # set: writers wait (a checkpoint converges)
        self.lock = threading.Lock()
        self.deleted_at: dict[str, float] = {}
        # A killed ``up``: its pid and its children.
        self.up_killed: queue.Queue[tuple[int, set[int]]] = queue.Queue()
        self.written = 0
        self.t0 = time.monotonic()
        self._events: list[list[Any]] = []  # [second, what, times]
        keys = {KEY: FAULT_TENANT}
        soak.settings = soak.settings.model_copy(update={
            "gateway": GatewaySettings(port=soak.settings.gateway.port, api_keys=keys),
            "query": QuerySettings(port=soak.settings.query.port, api_keys=keys),
        })  # fmt: skip

    def event(self, what: str) -> None:
        """One entry of the timeline; a repeat of the last one only counts."""
        with self.lock:
            if self._events and self._events[-1][1] == what:
                self._events[-1][2] += 1
            else:
                self._events.append([round(time.monotonic() - self.t0), what, 1])

    def timeline(self) -> list[str]:
        with self.lock:
            return [f"{t}s {what}" + (f" x{n}" if n > 1 else "") for t, what, n in self._events]

    # -- the stack's processes --------------------------------------------------------------

    def pid_of(self, victim: str) -> int | None:
        if victim == "up":
            return self.soak.up.pid if self.soak.up is not None else None
        wanted = _ARGV_WORDS.get(victim) or _MORE_ARGV_WORDS[victim]
        for pid, argv in sorted(self.soak.children().items()):
            if victim == "falkordb":  # Redis rewrites its title: "redis-server 127.0.0.1:0"
                if argv and "redis-server" in argv[0]:
                    return pid
            elif all(word in argv for word in wanted):
                return pid
        return None  # being restarted

    def faults(self) -> None:
        """Kills every ``kill_every_s``, each victim in turn in a shuffled order (so a run of
        any length spreads them evenly), and a pause every ``pause_every_s``, until the run
        stops."""
        order: list[str] = []
        next_pause = time.monotonic() + self.pause_every_s
        while not self.stop.wait(self.rng.uniform(*self.kill_every_s)):
            if not order:
                order = self.rng.sample(VICTIMS, len(VICTIMS))
            victim = order.pop()
            if self.soak.starting.is_set():  # its turn waits for the start to finish
                order.append(victim)
                continue
            if victim == "up" and self.soak.up is not None:
                # Started again by the main thread: a process started from this thread would
                # get its parent-death signal when this thread ends.
                killed = self.soak.up.pid
                self.up_killed.put((killed, set(self.soak.children())))
                with contextlib.suppress(ProcessLookupError):
                    os.kill(killed, signal.SIGKILL)
            elif (pid := self.pid_of(victim)) is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            else:  # being restarted: its turn waits for the next tick, not the next round (a
                # loaded machine's slow restarts cost whole kinds of kills in a short run)
                order.append(victim)
                continue
            self.report.kills[victim] += 1
            self.event(f"kill {victim}")
            # The next pause is due only once one happened: a pause whose victim was being
            # restarted (often the one just killed) was dropped, and a 2-minute CI run with a
            # pause every 40 s ended with none.
            if time.monotonic() >= next_pause and self.pause_one(exclude=victim):
                next_pause = time.monotonic() + self.pause_every_s

    def pause_one(self, exclude: str) -> bool:
        """Pause one running process (never ``up``, nor ``exclude``: it was just killed);
        False when none of them runs now."""
        running = [v for v in VICTIMS if v not in ("up", exclude) and self.pid_of(v) is not None]
        return bool(running) and self.pause(self.rng.choice(running))

    def pause(self, victim: str) -> bool:
        """SIGSTOP ``victim`` for a while, then SIGCONT; False when it is not running."""
        pid = self.pid_of(victim)
        if pid is None:
            return False
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            return False
        self.report.pauses[victim] += 1
        self.event(f"pause {victim}")
        self.stop.wait(self.rng.uniform(*self.pause_s))
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)  # it may have been killed and replaced meanwhile
        self.event(f"resume {victim}")
        return True

    # -- the load ---------------------------------------------------------------------------

    def files(self, writer: int) -> list[Path]:
        """The files ``writer`` owns (by a hash of the path, so a new file has one owner)."""

        def owner(path: Path) -> int:
            return int(hash_bytes(path.name.encode())[:8], 16) % self.writers

        return sorted(p for p in self.soak.source.rglob("*.py")
                      if p.name != "__init__.py" and owner(p) == writer)  # fmt: skip

    def agent(self, writer: int, client: PatchClient) -> None:
        """Single-file edits at its share of ``write_rate``, now and then a push of several
        files, a new file or a delete; every write retried until acknowledged."""
        interval = self.writers / self.write_rate
        next_push = time.monotonic() + self.rng.uniform(0, self.push_every_s)
        while not self.stop.is_set():
            if self.hold.is_set():
                self.stop.wait(0.2)
                continue
            owned = self.files(writer)
            draw = self.rng.random()
            if time.monotonic() >= next_push and len(owned) >= self.push_files:
                next_push = time.monotonic() + self.push_every_s * self.writers
                pushed = self.rng.sample(owned, self.push_files)
                self.write(client, {path: self.edited(path) for path in pushed})
            elif draw < 0.03 and len(owned) > 5:
                self.write(client, {self.rng.choice(owned): None})
            elif draw < 0.06:
                with self.lock:
                    self.written += 1
                    name = f"chaos_{writer}_{self.written}.py"
                path = self.soak.source / name
                self.write(client, {path: f"def {path.stem}():\n    return {self.written}\n"})
            elif owned:
                target = self.rng.choice(owned)
                self.write(client, {target: self.edited(target)})
            self.stop.wait(interval * self.rng.uniform(0.5, 1.5))

    def edited(self, path: Path) -> str:
        with self.lock:
            self.written += 1
            mark = self.written
        return path.read_text() + f"\n\ndef chaos_edit_{mark}():\n    return {mark}\n"

    def write(self, client: PatchClient, changes: dict[Path, str | None]) -> None:
        """Publish ``changes`` (None: delete) until the gateway acknowledges them; then, and
        only then, the working copy takes them."""
        body: list[dict[str, Any]] = []
        for path, content in changes.items():
            relative = path.relative_to(self.soak.source).as_posix()
            write: dict[str, Any] = {"repo": REPO, "path": relative,
                                     "op": "delete" if content is None else "upsert"}  # fmt: skip
            if content is not None:
                write["content"] = content
            body.append(write)
        deadline = time.monotonic() + 600  # every fault ends well before: then a finding
        while True:
            try:
                client.write(body)
                break
            except PatchClientError:  # down, restarting, paused: as an agent, try again
                self.report.retries += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        for path, content in changes.items():
            if content is None:
                path.unlink()
                self.deleted_at[path.relative_to(self.soak.source).as_posix()] = time.monotonic()
                self.report.deletes += 1
            else:
                path.write_text(content)
        self.report.writes += len(changes)

    def queries(self) -> None:
        words = ["helper", "Thing", "run total", "chaos_edit", "added", "module"]
        url = self.soak.client_settings().query.url
        headers = {"Authorization": f"Bearer {KEY}"}
        turn = 0
        while not self.stop.wait(1 / self.query_rate):
            turn += 1
            question = self.rng.choice(words)
            path, body = ("/v1/search", {"query": question, "repo": REPO, "limit": 10})
            if turn % 2 == 0:
                path = "/v1/context"
                body = {"query": question, "repo": REPO, "budget_tokens": 4000}
            try:
                answer = httpx.post(f"{url}{path}", json=body, headers=headers, timeout=30)
            except httpx.TransportError as error:
                self.report.queries["retryable"] += 1
                self.event(f"query {type(error).__name__}")
                continue
            if answer.status_code in _RETRYABLE:
                self.report.queries["retryable"] += 1
                self.event(f"query {answer.status_code} {answer.text[:80]!r}")
            elif answer.status_code != 200:
                self.report.queries["unclear"] += 1
                self.event(f"query {answer.status_code} {answer.text[:80]!r}")
            else:
                outcome = self._judged(path, answer.json())
                self.report.queries[outcome] += 1
                self.event(f"query {outcome}")
            if turn % 10 == 0:
                self.lag()

    def _judged(self, endpoint: str, answer: dict[str, Any]) -> str:
        """``stale`` when a hit names a file deleted over a minute ago and the stack did not
        say it was that far behind; ``behind`` when it did; else ``answered``."""
        paths = {hit.get("path") for hit in answer.get("hits", [])}
        paths |= {block.get("provenance", {}).get("path") for block in answer.get("blocks", [])}
        now = time.monotonic()
        for path in paths:
            gone = self.deleted_at.get(str(path))
            if (
                gone is None
                or now - gone <= _STALE_AFTER_S
                or (self.soak.source / str(path)).exists()
            ):
                continue
            # What the answer says of itself first: a freshness read beside it may meet the
            # query service killed (a CI run counted an answer stale that said "vector lag
            # 89 s" of a file deleted 88 s before, its own read having failed).
            declared = _declared_lag(answer.get("freshness"))
            if declared is None:
                declared = self._lag_once_readable()
            if declared is not None and declared >= now - gone - 5.0:  # it said so itself
                return "behind"
            self.report.stale_answers.append(
                f"{endpoint} hit {path} deleted {now - gone:.0f} s ago; "
                f"freshness then: lag {declared} s; answer freshness {answer.get('freshness')}"
            )
            return "stale"
        return "answered"

    def _lag_once_readable(self) -> float | None:
        """The stack's lag, read again for up to ``_LAG_READ_S`` while the read fails: a CI
        run counted a search stale whose freshness read, a second after FalkorDB was killed,
        met the store down. An answer is judged by what the stack says of itself once it
        can say anything; a lag it then declares below the file's age is still stale."""
        deadline = time.monotonic() + _LAG_READ_S
        lag = self.lag()
        while lag is None and time.monotonic() < deadline and not self.stop.wait(1.0):
            lag = self.lag()
        return lag

    def lag(self) -> float | None:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            fresh = httpx.get(f"{self.soak.client_settings().query.url}/v1/freshness",
                              params={"repo": REPO}, timeout=10,
                              headers={"Authorization": f"Bearer {KEY}"}).json()  # fmt: skip
            lag = _declared_lag(fresh)
            if lag is not None:
                self.report.max_lag_s = max(self.report.max_lag_s, lag)
            return lag
        return None

    # -- the run ----------------------------------------------------------------------------

    def converged(self) -> bool:
        """Both tiers hold every file of the working copy at its content, and nothing else."""
        expected = {str(p.relative_to(self.soak.source)): hash_bytes(p.read_bytes())
                    for p in self.soak.source.rglob("*.py")}  # fmt: skip
        try:
            settings = self.soak.client_settings()
            graph, vectors = open_graph_store(settings), open_vector_store(settings)
        except Exception:  # a store restarting: not yet
            return False
        try:
            held = [graph.file_hashes(FAULT_TENANT, REPO, "main"),
                    vectors.file_hashes(FAULT_TENANT, REPO, "main")]  # fmt: skip
        except Exception:
            return False
        finally:
            with contextlib.suppress(Exception):
                graph.close()
                vectors.close()
        return all(tier == expected for tier in held)

    def tend_up(self, wait_s: float = 0.0) -> None:
        """Start ``up`` again if the faults killed it (waiting up to ``wait_s`` for that)."""
        with contextlib.suppress(queue.Empty):
            killed, children = (self.up_killed.get(timeout=wait_s) if wait_s
                                else self.up_killed.get_nowait())  # fmt: skip
            self.soak.restart_up(children, killed)
            self.event("up started again")

    def wait_converged(self, timeout_s: float) -> float:
        started = time.monotonic()
        while True:
            self.tend_up()  # a checkpoint may meet an `up` the faults just killed
            if self.converged():
                break
            if time.monotonic() - started > timeout_s:
                raise RuntimeError(f"not converged after {timeout_s:.0f}s: "
                                   f"{self.soak.behind()}\n{self.soak.log_tails()}")  # fmt: skip
            time.sleep(2.0)
        return time.monotonic() - started

    def covered(self, min_answered: int) -> bool:
        """Every kind of process was killed once and ``min_answered`` queries were answered."""
        return (len(self.report.kills) == len(VICTIMS)
                and self.report.queries["answered"] >= min_answered)  # fmt: skip

    def run(self, seconds: float, checkpoint_every_s: float = 0.0, converge_s: float = 600.0,
            min_answered: int = 0, max_seconds: float = 0.0) -> ChaosReport:  # fmt: skip
        """Index the corpus, then ``seconds`` of load and faults (with a checkpoint every
        ``checkpoint_every_s``: writes held until the stores hold the working copy), then the
        drain and the comparison with a clean rebuild.

        With ``max_seconds``, the load goes on past ``seconds`` (up to ``max_seconds``) until
        every kind of process was killed once and ``min_answered`` queries were answered: a
        loaded machine restarts the stack slowly (Milvus Lite took 35 s to start beside three
        other stacks on 2 cores), and a run of fixed length then covered less than it says."""
        self.soak.index_once()
        started = self.t0 = time.monotonic()
        until, last = started + seconds, started + max(seconds, max_seconds)
        gateway = gateway_url(self.soak.client_settings())
        clients = [PatchClient(gateway, KEY, timeout_s=15) for _ in range(self.writers)]
        threads = [threading.Thread(target=self.agent, args=(i, c), daemon=True)
                   for i, c in enumerate(clients)]  # fmt: skip
        threads += [threading.Thread(target=self.queries, daemon=True),
                    threading.Thread(target=self.faults, daemon=True)]  # fmt: skip
        for thread in threads:
            thread.start()
        next_checkpoint = started + checkpoint_every_s if checkpoint_every_s else float("inf")
        try:
            while (now := time.monotonic()) < until or (
                now < last and not self.covered(min_answered)
            ):
                self.tend_up(wait_s=1.0)
                if time.monotonic() >= next_checkpoint:
                    self.hold.set()
                    self.report.checkpoints.append(round(self.wait_converged(converge_s), 1))
                    self.hold.clear()
                    next_checkpoint = time.monotonic() + checkpoint_every_s
        finally:
            self.stop.set()
            threads[-1].join(120)  # the faults: a last `up` they killed is started again
            self.tend_up()
            for thread in threads:  # a writer finishes its write: the tree is then its truth
                thread.join(660)
            for client in clients:
                client.close()
        self.report.seconds = round(time.monotonic() - started, 1)
        self.report.timeline = self.timeline()
        self.report.drain_s = round(self.wait_converged(converge_s), 1)
        self.report.final_lag_s = self.lag()
        # Rows a sink or Milvus killed mid-batch left under no record: the audit's, within
        # a pass and its confirmation after the restart (about a minute).
        result = self.soak.rebuild_and_compare(leftovers_s=LEFTOVERS_S)
        self.report.leftovers_waited_s = result.leftovers_waited_s
        self.report.lost, self.report.duplicated = result.lost, result.duplicated
        self.report.equal, self.report.differences = result.equal, result.differences
        self.report.resurrected = sum("deleted but still live" in d for d in result.differences)
        return self.report


def _declared_lag(freshness: object) -> float | None:
    """The largest ``lag_s`` of the tiers a freshness answer names (a search's names the
    vector tier alone); None when it has no such figures."""
    tiers = freshness if isinstance(freshness, dict) else {}
    lags = []
    for tier in ("graph", "vector"):
        with contextlib.suppress(KeyError, TypeError, ValueError):
            lags.append(float(tiers[tier]["lag_s"]))
    return max(lags) if lags else None
