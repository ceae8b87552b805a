"""The vector tier checked against itself at start: each file record's listed chunk rows
against the chunk rows Milvus holds.

Milvus Lite is not crash-safe: a SIGKILL during a compaction can leave its manifest naming
data files that were never written ("manifest references missing data file"). The rows in
them are gone while the files collection still holds the records (and fences) of their
files, so every replay of those files is stale and nothing would put them back. A record
whose rows are missing is reset (record and remaining rows deleted): its file is owed again,
and the outbox (the log of record) or ``index``/``reconcile`` rebuilds it. Rows no record
lists, at or below their record's version, are leftovers and are deleted.

The planner (:func:`plan_repair`) is pure; :func:`audit_vector_tier` does the I/O.
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
    for pk, fuid in listed.items():
        if pk not in present:
            plan.rows_missing += 1
            plan.damaged[fuid] = tenants[fuid]
    return plan


def audit_vector_tier(store: MilvusVectorStore, repair: bool = True) -> VectorAudit:
    """Compare, and with ``repair`` reset the damaged files and delete the leftovers."""
    started = time.perf_counter()
    records = store.query_all(
        'tenant != ""',
        ["tenant", "file_uid", "version", "chunk_rows", "chunk_rows_complete"],
        collection=store.files,
    )
    listed = sum(len(r["chunk_rows"]) for r in records if TOMBSTONE_TENANT_MARK not in r["tenant"])
    every_listed = all(r["chunk_rows_complete"] for r in records)
    counted = store.client.query(store.chunks, filter="", output_fields=["count(*)"])
    if every_listed and counted and int(counted[0]["count(*)"]) == listed:
        # As many rows as the records list: none lost (a loss with exactly as many leftovers
        # beside it is not looked for), and the scan of every row is skipped.
        rows: list[dict[str, Any]] = []
        records = [{**r, "chunk_rows": []} for r in records]
        plan = plan_repair(records, rows)
        plan.rows_listed = listed
    else:
        rows = store.query_all('pk != ""', ["pk", "file_uid", "version"])
        plan = plan_repair(records, rows)
    if repair and (plan.damaged or plan.leftovers):
        client = store.client
        for batch in batches(sorted(plan.damaged)):
            client.delete(store.chunks, filter=f"file_uid in {lit_list(batch)}")
            client.delete(store.files, ids=[file_key(fuid) for fuid in batch])
        for batch in batches(plan.leftovers):
            client.delete(store.chunks, ids=batch)
        store.flush()
    audit = VectorAudit(plan, time.perf_counter() - started)
    level = logging.WARNING if plan.damaged or plan.leftovers else logging.INFO
    log.log(level, "event=vector_audit files=%d rows=%d rows_missing=%d files_reset=%d "
            "leftover_rows=%d seconds=%.2f", plan.files_checked, plan.rows_listed,
            plan.rows_missing, len(plan.damaged), len(plan.leftovers), audit.seconds)  # fmt: skip
    return audit
