"""Replays the gateway's outbox into a broker that lost its log, and compacts what is applied.

Run by the supervisor of the embedded stack: it restarts the memory-only broker itself, so it
knows exactly when acknowledged events may have been lost. An entry is applied when both tiers
hold its file at its version or a newer one (a delete counts: the fence keeps its version).
Applied entries stay as their files' latest events (see ``producers.outbox``); a replay after
a start checks them again, so what a store lost since it applied them is published again.

Between restarts, an entry still owed a minute after it was written while every consumer
group has caught up with the bus was missed on the way (seen: a sink that joined its group
during a burst never saw the first record of two partitions, and an index waited on them
for good). It is published again, at most ``MAX_REDELIVERIES`` times per entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import Topics
from patchstream.config.settings import Settings
from patchstream.embedded.stall_watch import read_lags
from patchstream.producers.outbox import REPLAY_DUE_SINCE, Outbox, OutboxEntry, outbox_path
from patchstream.schemas.events import view_ref
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.graph.keys import scope_of

if TYPE_CHECKING:  # the supervisor imports this module; pymilvus only when a store opens
    from patchstream.stores.vector.milvus import MilvusVectorStore
    from patchstream.stores.vector.milvus_audit import RepairPlan

log = logging.getLogger("patchstream.outbox")


_BULK = 32  # from this many entries of one branch, read the branch's versions at once
REDELIVER_AFTER_S = 60.0  # owed this long, with the bus drained: missed on the way
MAX_REDELIVERIES = 3  # per entry and tender: one a stage refuses is not sent forever
# Applied entries are checked again this often: the restart soak saw Milvus Lite, after a
# kill, stop showing 128 files' records it had shown after its restart, until the next one.
RECHECK_S = 120.0
# ... and every minute for the first minutes after Milvus (re)started: the restart soak saw
# records of files nobody was writing vanish two to four minutes after a SIGKILL restart
# (round 16 of 2026-12-03, 108 files), found by the next recheck and republished.
RECHECK_AFTER_START_S = 600.0
RECHECK_EARLY_S = 60.0
# The vector tier is checked against itself this often beside the running sinks (found:
# leftover rows and reset records after restarts); suspects are confirmed a tend later.
AUDIT_S = 300.0


def next_recheck_at(now: float, started_since: float | None, later_s: float = RECHECK_S) -> float:
    """When the retained entries (or, with ``later_s`` AUDIT_S, the vector tier's rows) are
    checked next: every ``RECHECK_EARLY_S`` for ``RECHECK_AFTER_START_S`` after Milvus
    (re)started, every ``later_s`` (RECHECK_S by default) otherwise."""
    if started_since is not None and now - started_since < RECHECK_AFTER_START_S:
        return now + RECHECK_EARLY_S
    return now + later_s


@dataclass
class Split:
    applied: list[OutboxEntry] = field(default_factory=list)  # both tiers hold them
    pending: list[OutboxEntry] = field(default_factory=list)  # owed to a tier
    dropped: list[OutboxEntry] = field(default_factory=list)  # of a ref dropped since


def split_applied(
    entries: Sequence[OutboxEntry], graph: GraphStore, vectors: MilvusVectorStore
) -> Split:
    """Sort entries by what the stores hold. A few writes of a branch are looked up one by
    one; an index run's hundreds are read with two queries for the branch."""
    by_branch: dict[tuple[str, str, str], list[OutboxEntry]] = defaultdict(list)
    for entry in entries:
        branch = view_ref(entry.ref, entry.workspace)
        by_branch[(entry.tenant, entry.repo, branch)].append(entry)
    done: set[int] = set()
    gone: set[int] = set()
    dropped = {tenant: graph.dropped_refs(tenant) for tenant, _, _ in by_branch}
    for (tenant, repo, branch), group in by_branch.items():
        # A dropped ref's entries up to the drop go: replaying them would resurrect it.
        dropped_at = dropped[tenant].get(scope_of(tenant, repo, branch), -1)
        gone.update(e.id for e in group if e.version <= dropped_at)
        group = [e for e in group if e.version > dropped_at]
        if len(group) >= _BULK:
            graph_versions = graph.file_versions(tenant, repo, branch)
            vector_versions = vectors.file_versions(tenant, repo, branch)
            versions = [(graph_versions.get(e.path), vector_versions.get(e.path)) for e in group]
        else:
            versions = []
            for e in group:
                fence = graph.file_version(tenant, repo, branch, e.path)
                versions.append((fence.version if fence else None,
                                 vectors.file_version(tenant, repo, branch, e.path)))  # fmt: skip
        for entry, (in_graph, in_vectors) in zip(group, versions, strict=True):
            if (
                in_graph is not None
                and in_vectors is not None
                and (min(in_graph, in_vectors) >= entry.version)
            ):
                done.add(entry.id)
    split = Split()
    for e in entries:
        (split.dropped if e.id in gone else split.applied if e.id in done else split.pending
         ).append(e)  # fmt: skip
    return split


async def republish(settings: Settings, entries: Sequence[OutboxEntry]) -> int:
    """Publish the entries again, untouched, in acknowledgement order."""
    if not entries:
        return 0
    topic = Topics.from_settings(settings.kafka).patch_events
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        for entry in entries:
            await producer.send_and_wait(topic, key=entry.key, value=entry.value)
    finally:
        await producer.stop()
    return len(entries)


def overdue(
    pending: Sequence[OutboxEntry], now: float, after_s: float, sent: Mapping[int, int],
    most: int,
) -> list[OutboxEntry]:  # fmt: skip
    """The entries written more than ``after_s`` before ``now`` and published again fewer
    than ``most`` times (``sent``: entry id -> times)."""
    return [e for e in pending if e.created_at < now - after_s and sent.get(e.id, 0) < most]


Redeliver = Callable[[list[OutboxEntry]], list[OutboxEntry]]


def replay_and_prune(
    settings: Settings, graph: GraphStore, vectors: MilvusVectorStore, replay: bool,
    redeliver: Redeliver | None = None, recheck: bool = False,
) -> tuple[int, int]:  # fmt: skip
    """Compact what both tiers hold; with ``replay`` (after a start or a restart of the
    broker, the gateway or a store), check the retained entries again too and republish
    every entry a tier lacks. Otherwise ``redeliver`` picks which of the owed entries to
    republish (those missed on the way); with ``recheck``, the retained entries are checked
    too, so one a tier has lost since it was applied is owed, and offered, again.
    (replayed, removed)."""
    path = outbox_path(settings)
    if not path.exists():
        return 0, 0
    outbox = Outbox(path)
    replayed = removed = owed_again = 0
    try:
        after = 0
        while batch := outbox.pending(limit=1000, after_id=after, retained=replay or recheck):
            after = batch[-1].id
            split = split_applied(batch, graph, vectors)
            outbox.remove(e.id for e in split.dropped)
            removed += len(split.dropped)
            removed += outbox.mark_applied(e for e in split.applied if not e.applied)
            lost = [e.id for e in split.pending if e.applied]  # a store lost it since
            outbox.mark_pending(lost)
            owed_again += len(lost)
            if replay:
                replayed += asyncio.run(republish(settings, split.pending))
            elif redeliver is not None and split.pending:
                missed = redeliver(split.pending)
                replayed += asyncio.run(republish(settings, missed))
                if missed:
                    log.warning("event=outbox_redelivered entries=%d first=%s/%s@%d", len(missed),
                                missed[0].repo, missed[0].path, missed[0].version)  # fmt: skip
    finally:
        outbox.close()
    if replayed or removed:
        log.info("event=outbox replayed=%d removed=%d owed_again=%d", replayed, removed,
                 owed_again)  # fmt: skip
    return replayed, removed


class OutboxTender:
    """The supervisor's side of the outbox: after a start or a restart of the broker, the
    gateway or Milvus, check the vector tier against itself (``milvus_audit``) and replay
    what either tier lacks; every 30 s, compact what both tiers hold."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.replay_due = False
        self.audit_due = False
        self.next_prune = 0.0
        self.next_recheck = 0.0
        self.next_audit = 0.0
        self.started_since: float | None = None  # when Milvus last (re)started, tend's clock
        self.vectors_started = False
        self.suspects: RepairPlan | None = None
        self.redelivered: dict[int, int] = {}  # entry id -> times published again
        self._unverified: bool | None = None  # what the outbox says of the replay (None: unread)
        self._stores: tuple[GraphStore, MilvusVectorStore] | None = None

    def vectors_restarted(self) -> None:
        self.audit_due = self.replay_due = self.vectors_started = True

    def vector_sink_restarted(self) -> None:
        """A sink that died between a batch's chunk rows and its file records left rows no
        record lists (the file's next version replaces the record, not those rows; a CI
        chaos run compared 3 such rows): an audit pass at the next tend, confirmed at the
        one after (about a minute), not at the next periodic one (300 s)."""
        self.audit_due = True

    def tend(self, now: float) -> None:
        if not self.settings.gateway.outbox or not (self.replay_due or now >= self.next_prune):
            return
        if self.vectors_started:
            self.vectors_started, self.started_since = False, now
        replaying = self.replay_due
        if replaying:  # until it has run, freshness cannot vouch for what a store held
            self._mark_unverified(True)
        try:
            graph, vectors = self._opened()
            if self.audit_vectors(now):
                self.next_recheck = 0.0  # files were reset: owed again, published again now
            recheck = now >= self.next_recheck
            replay_and_prune(self.settings, graph, vectors, replay=self.replay_due,
                             redeliver=self.missed, recheck=recheck)  # fmt: skip
            self.replay_due = False
            if replaying:
                self._mark_unverified(False)
            self.next_prune = now + 30.0
            if recheck:
                self.next_recheck = next_recheck_at(now, self.started_since)
        except Exception as exc:  # a store or the broker is not back yet: next round
            log.warning("event=outbox_deferred error=%s: %s", type(exc).__name__, str(exc)[:200])
            self.close()

    def _mark_unverified(self, due: bool) -> None:
        """Say in the outbox (``query.owed`` reads it) that a replay after a restart waits;
        the first time it became due is kept until it has run."""
        path = outbox_path(self.settings)
        if not path.exists() or due == self._unverified:
            return
        outbox = Outbox(path)
        try:
            if due and outbox.meta(REPLAY_DUE_SINCE) is None:
                outbox.set_meta(REPLAY_DUE_SINCE, repr(time.time()))
            elif not due:
                outbox.delete_meta(REPLAY_DUE_SINCE)
        finally:
            outbox.close()
        self._unverified = due

    def missed(self, pending: list[OutboxEntry]) -> list[OutboxEntry]:
        """Of the owed entries, those overdue while every group has consumed all the bus
        holds (a backlog is late, not lost): what to publish again."""
        due = overdue(pending, time.time(), REDELIVER_AFTER_S, self.redelivered,
                      MAX_REDELIVERIES)  # fmt: skip
        if not due:
            return []
        lags = read_lags(self.settings.kafka)
        if lags is None or any(lag.pending for lag in lags.values()):
            return []
        for entry in due:
            self.redelivered[entry.id] = self.redelivered.get(entry.id, 0) + 1
        return due

    def audit_at_start(self) -> None:
        """Before the sinks start, nothing writes: what one pass finds is repaired at once.
        Raises when Milvus does not answer (the audit stays due, for :meth:`audit_vectors`)."""
        from patchstream.stores.vector.milvus_audit import audit_vector_tier

        audit_vector_tier(self._opened()[1])
        self.audit_due = False

    def audit_vectors(self, now: float) -> bool:
        """Beside the running sinks: a due or periodic pass names suspects, the next tend
        confirms and repairs them. True when files were reset (they are owed again)."""
        from patchstream.stores.vector.milvus_audit import audit_vector_tier, confirm_suspects

        vectors = self._opened()[1]
        if self.suspects is not None:
            suspects, self.suspects = self.suspects, None
            return bool(confirm_suspects(vectors, suspects).damaged)
        if self.audit_due or now >= self.next_audit:
            plan = audit_vector_tier(vectors, repair_now=False).plan
            self.suspects = plan if plan.damaged or plan.leftovers else None
            self.audit_due = False
            # Soon after a start too: replays of what a killed Milvus lost land then, and rows
            # they leave behind (soak H round 20: 2 extra rows, past the 180 s the soak waits).
            self.next_audit = next_recheck_at(now, self.started_since, AUDIT_S)
        return False

    def _opened(self) -> tuple[GraphStore, MilvusVectorStore]:
        if self._stores is None:
            from patchstream.stores.factory import open_graph_store, open_vector_store

            self._stores = (open_graph_store(self.settings), open_vector_store(self.settings))
        return self._stores

    def close(self) -> None:
        if self._stores is not None:
            for store in self._stores:
                with contextlib.suppress(Exception):
                    store.close()
            self._stores = None
