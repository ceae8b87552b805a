"""The vector tier checked against itself at start: each file record's listed chunk rows
against the chunk rows Milvus holds.

Milvus Lite is not crash-safe: a SIGKILL during a compaction can leave its manifest naming
data files that were never written ("manifest references missing data file"). The rows in
them are gone while the files collection still holds the records (and fences) of their
files, so every replay of those files is stale and nothing would put them back. A record
whose rows are missing is reset (record and remaining rows deleted): its file is owed again,
and the outbox (the log of record) or ``index``/``reconcile`` rebuilds it. Rows no record
lists, at or below their record's version, are leftovers and are deleted.

At start nothing writes, and :func:`audit_vector_tier` repairs what one pass finds. Beside a
running sink (an audit deferred past the start, and the periodic one) a pass only names
suspects: the records and rows are read at two moments, so a write between them looks like
damage (rows of the old version gone, the record not yet moved on). :func:`confirm_suspects`
reads the suspects' rows again and then their records, a tender's round later; only what is
still wrong, under the same record version, is repaired. Reset files are owed again by the
outbox's recheck of retained entries, so even a wrong reset converges.

The planners (:func:`plan_repair`, :func:`confirmed`) are pure; the rest does the I/O.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.milvus_client import lit_list
from patchstream.stores.vector.milvus_plan import TOMBSTONE_TENANT_MARK
from patchstream.stores.vector.milvus_rows import batches, file_key

log = logging.getLogger(__name__)


@dataclass
class RepairPlan:
    files_checked: int = 0
    rows_listed: int = 0
    rows_missing: int = 0
    damaged: dict[str, str] = field(default_factory=dict)  # file uid -> tenant
    leftovers: list[str] = field(default_factory=list)  # pks of rows no record lists
    versions: dict[str, int] = field(default_factory=dict)  # damaged file uid -> its record
    leftover_files: dict[str, str] = field(default_factory=dict)  # leftover pk -> file uid

    @property
    def suspect_files(self) -> set[str]:
        return set(self.damaged) | set(self.leftover_files.values())


@dataclass
class VectorAudit:
    plan: RepairPlan
    seconds: float

    @property
    def damaged(self) -> dict[str, str]:
        return self.plan.damaged


def plan_repair(records: Iterable[dict[str, Any]], rows: Iterable[dict[str, Any]]) -> RepairPlan:
    """Which files lost rows, and which rows are leftovers. ``records``: the files
    collection (tenant, file_uid, version, chunk_rows, chunk_rows_complete); ``rows``: the
    chunks collection (pk, file_uid, version)."""
    plan = RepairPlan()
    listed: dict[str, str] = {}  # pk -> file uid
    fences: dict[str, int] = {}  # file uid -> version, for files whose rows are all listed
    tenants: dict[str, str] = {}
    for record in records:
        if TOMBSTONE_TENANT_MARK in record["tenant"]:
            continue
        plan.files_checked += 1
        if not record["chunk_rows_complete"]:
            continue  # too many rows to list: nothing to compare with
        fuid = record["file_uid"]
        fences[fuid] = int(record["version"])
        tenants[fuid] = record["tenant"]
        for item in record["chunk_rows"]:
            listed[item.split(":", 1)[0]] = fuid
    plan.rows_listed = len(listed)
    present: set[str] = set()
    for row in rows:
        pk = row["pk"]
        present.add(pk)
        if pk in listed:
            continue
        fence = fences.get(row["file_uid"])
        # A row newer than its record is a write in flight (rows go in before the record).
        if fence is not None and int(row["version"]) <= fence:
            plan.leftovers.append(pk)
            plan.leftover_files[pk] = row["file_uid"]
    for pk, fuid in listed.items():
        if pk not in present:
            plan.rows_missing += 1
            plan.damaged[fuid] = tenants[fuid]
            plan.versions[fuid] = fences[fuid]
    return plan


def confirmed(first: RepairPlan, second: RepairPlan) -> RepairPlan:
    """What both passes found: damage under the same record version (a record that moved on
    was a write in flight), and the same leftover rows."""
    plan = RepairPlan(first.files_checked, first.rows_listed, second.rows_missing)
    for fuid, tenant in second.damaged.items():
        if first.versions.get(fuid) == second.versions[fuid]:
            plan.damaged[fuid] = tenant
            plan.versions[fuid] = second.versions[fuid]
    for pk in second.leftovers:
        if pk in first.leftover_files:
            plan.leftovers.append(pk)
            plan.leftover_files[pk] = second.leftover_files[pk]
    return plan


def read_plan(store: MilvusVectorStore) -> RepairPlan:
    """One pass over the whole tier: every record, and every row when their count differs
    from what the records list. Writes nothing."""
    records = store.query_all('tenant != ""', RECORD_FIELDS, collection=store.files)
    listed = sum(len(r["chunk_rows"]) for r in records if TOMBSTONE_TENANT_MARK not in r["tenant"])
    every_listed = all(r["chunk_rows_complete"] for r in records)
    counted = store.client.query(store.chunks, filter="", output_fields=["count(*)"])
    if every_listed and counted and int(counted[0]["count(*)"]) == listed:
        # As many rows as the records list: none lost (a loss with exactly as many leftovers
        # beside it is not looked for), and the scan of every row is skipped.
        plan = plan_repair([{**r, "chunk_rows": []} for r in records], [])
        plan.rows_listed = listed
        return plan
    return plan_repair(records, store.query_all('pk != ""', ROW_FIELDS))


def read_plan_of(store: MilvusVectorStore, file_uids: set[str]) -> RepairPlan:
    """A pass over some files: their rows first, then their records, so a write that lands
    between the two reads shows as a record that moved on, never as damage."""
    rows: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for batch in batches(sorted(file_uids)):
        rows += store.query_all(f"file_uid in {lit_list(batch)}", ROW_FIELDS)
    for batch in batches(sorted(file_uids)):
        records += store.query_all(f"file_uid in {lit_list(batch)}", RECORD_FIELDS,
                                   collection=store.files)  # fmt: skip
    return plan_repair(records, rows)


def repair(store: MilvusVectorStore, plan: RepairPlan) -> None:
    """Reset the damaged files (record and remaining rows) and delete the leftover rows."""
    if not (plan.damaged or plan.leftovers):
        return
    client = store.client
    for batch in batches(sorted(plan.damaged)):
        client.delete(store.chunks, filter=f"file_uid in {lit_list(batch)}")
        client.delete(store.files, ids=[file_key(fuid) for fuid in batch])
    for batch in batches(plan.leftovers):
        client.delete(store.chunks, ids=batch)
    store.flush()


def audit_vector_tier(store: MilvusVectorStore, repair_now: bool = True) -> VectorAudit:
    """Compare, and with ``repair_now`` (nothing else writing) reset the damaged files and
    delete the leftovers."""
    started = time.perf_counter()
    plan = read_plan(store)
    if repair_now:
        repair(store, plan)
    event = "vector_audit" if repair_now else "vector_audit_suspects"
    return _logged(VectorAudit(plan, time.perf_counter() - started), event)


def confirm_suspects(store: MilvusVectorStore, suspects: RepairPlan) -> VectorAudit:
    """A later pass over what an earlier one suspected, beside running writers: repairs
    what is still wrong under the same record version."""
    started = time.perf_counter()
    plan = confirmed(suspects, read_plan_of(store, suspects.suspect_files))
    repair(store, plan)
    return _logged(VectorAudit(plan, time.perf_counter() - started), "vector_audit_confirmed")


def _logged(audit: VectorAudit, event: str) -> VectorAudit:
    plan = audit.plan
    level = logging.WARNING if plan.damaged or plan.leftovers else logging.INFO
    log.log(level, "event=%s files=%d rows=%d rows_missing=%d files_reset=%d "
            "leftover_rows=%d seconds=%.2f", event, plan.files_checked, plan.rows_listed,
            plan.rows_missing, len(plan.damaged), len(plan.leftovers), audit.seconds)  # fmt: skip
    return audit


RECORD_FIELDS = ["tenant", "file_uid", "version", "chunk_rows", "chunk_rows_complete"]
ROW_FIELDS = ["pk", "file_uid", "version"]
