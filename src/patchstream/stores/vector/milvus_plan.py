"""What applying a tenant's fresh deltas does to the vector store's rows: a pure planner.

No I/O: given the deltas that are newer than the store's fences and the chunk rows the store
holds for their files, :func:`plan_rows` says which rows to write and delete and what each
file's record lists afterwards; :func:`credit_embeddings` says, per file, how many of its new
content hashes were embedded and how many reused; :func:`file_record` is a file's fence row.
``milvus.py`` does the reads and writes around them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from patchstream.parsing.hashing import hash_bytes
from patchstream.schemas.chunks import Chunk
from patchstream.schemas.state import FileDelta
from patchstream.stores.vector.milvus_rows import (
    FileRows,
    delta_scope,
    file_key,
    file_uid,
    listed_rows,
    row_fp,
    rows_listable,
)


@dataclass(frozen=True)
class RowWrite:
    delta: FileDelta
    chunk: Chunk
    pk: str
    fp: str


@dataclass
class RowPlan:
    writes: list[RowWrite] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)  # pks
    final_rows: dict[str, dict[str, str]] = field(default_factory=dict)  # file uid -> pk -> fp

    def texts_by_hash(self) -> dict[str, str]:
        """The text of each content hash the writes need a vector for."""
        return {w.chunk.content_hash: w.chunk.text for w in self.writes}


def chunk_pk(delta: FileDelta, chunk: Chunk) -> str:
    scope = delta_scope(delta)
    return hash_bytes(f"{scope}|{chunk.id}".encode())


def plan_rows(fresh: Sequence[FileDelta], stored: dict[str, FileRows]) -> RowPlan:
    """Rows to write (new, or changed in what a row holds), rows to delete (a file's rows its
    delta no longer has: all of them for a delete), and each file's rows afterwards."""
    plan = RowPlan()
    for delta in fresh:
        held = stored.get(file_uid(delta), FileRows())
        wanted: dict[str, tuple[Chunk, str]] = {}
        if delta.op == "upsert":
            for chunk in delta.chunks:
                wanted[chunk_pk(delta, chunk)] = (chunk, row_fp(delta, chunk))
        plan.deletes.extend(sorted(held.fps.keys() - wanted.keys()))
        plan.final_rows[file_uid(delta)] = {pk: fp for pk, (_, fp) in wanted.items()}
        for pk, (chunk, fp) in sorted(wanted.items()):
            if held.fps.get(pk) != fp:
                plan.writes.append(RowWrite(delta, chunk, pk, fp))
    return plan


def credit_embeddings(
    fresh: Sequence[FileDelta], writes: Sequence[RowWrite], embedded: set[str]
) -> dict[str, tuple[int, int]]:
    """File uid -> (content hashes embedded for it, reused): a hash embedded once in the batch
    is credited to the first file that needed it, and counts as reused for the others."""
    credited: set[str] = set()
    per_file: dict[str, tuple[int, int]] = {}
    for delta in fresh:
        hashes = {w.chunk.content_hash for w in writes if w.delta is delta}
        new = (hashes & embedded) - credited
        credited |= new
        per_file[file_uid(delta)] = (len(new), len(hashes) - len(new))
    return per_file


def file_record(
    delta: FileDelta, tenant: str, applied_at: float, credit: tuple[int, int],
    rows: dict[str, str],
) -> dict[str, Any]:  # fmt: skip
    """A file's row in the files collection: its fence (version, deleted) and its rows."""
    uid = file_uid(delta)
    return {
        "pk": file_key(uid),
        "tenant": tenant,
        "file_uid": uid,
        "scope": delta_scope(delta),
        "version": delta.version,
        "deleted": delta.op == "delete",
        "applied_at": applied_at,
        "path": delta.path,
        "content_hash": delta.content_hash or "",
        "chunks_embedded": credit[0],
        "chunks_reused": credit[1],
        "chunk_rows": listed_rows(rows),
        "chunk_rows_complete": rows_listable(rows),
        "unused": [0.0, 0.0],
    }


TOMBSTONE_TENANT_MARK = "#dropped"  # no tenant name holds '#': no tenant's query sees these


def tombstone_uid(scope: str) -> str:
    return f"dropped|{scope}"


def tombstone_record(tenant: str, scope: str, version: int, now: float) -> dict[str, Any]:
    """A dropped ref's tombstone in the files collection: deltas of ``scope`` up to
    ``version`` are stale (a replay of the outbox or the topic must not bring it back)."""
    uid = tombstone_uid(scope)
    return {
        "pk": file_key(uid), "tenant": tenant + TOMBSTONE_TENANT_MARK, "file_uid": uid,
        "scope": uid, "version": version, "deleted": True, "applied_at": now, "path": "",
        "content_hash": "", "chunks_embedded": 0, "chunks_reused": 0, "chunk_rows": [],
        "chunk_rows_complete": True, "unused": [0.0, 0.0],
    }  # fmt: skip
