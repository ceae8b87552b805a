"""Milvus vector store, per embedder: chunks (searched), files (fences and each file's rows)
and vector refs (per tenant, the chunk row holding each content hash's embedding).

- Rows are keyed by ``xxh3(scope|chunk id)``; ``tenant`` is the partition key and every
  search and query filters on it server-side (an empty tenant matches nothing).
- ``text`` feeds a BM25 function into a sparse field (``SPARSE_INVERTED_INDEX``): what
  Milvus searches when the query service's copy cannot answer. An embedding is kept as int8
  codes (``dense_codes``) that the copy loads and ranks; Milvus keeps no float32 vector.
- Applying deltas diffs each file's delta against the rows Milvus holds, so any delivery
  order ends in the same rows; a chunk is embedded only when the tenant has no vector for
  its content hash yet.
- Every lookup a write makes is by primary key: a file's record (its fence and the
  ``pk:fp`` of its chunk rows) and the vectors of content hashes. A filter on a non-key field
  scans every row, and a sink making one per batch slows down as the collection grows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import grpc
from pymilvus import MilvusException

from patchstream.embedders.base import Embedder
from patchstream.errors import StoreRefused
from patchstream.schemas.state import FileDelta
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.overlays import View
from patchstream.stores.vector.dense_codes import decoded_vector
from patchstream.stores.vector.milvus_client import (
    DeadlinedClient,
    connect,
    lit,
    lit_list,
    milvus_error,
)
from patchstream.stores.vector.milvus_file_reads import QUERY_LIMIT, FileRecordReads
from patchstream.stores.vector.milvus_plan import (
    TOMBSTONE_TENANT_MARK,
    credit_embeddings,
    file_record,
    plan_rows,
    tombstone_record,
    tombstone_uid,
)
from patchstream.stores.vector.milvus_rows import (
    FileRows,
    SearchHit,
    VectorApplyStats,
    batches,
    chunk_row,
    delta_scope,
    file_key,
    file_uid,
    hit_from_row,
    search_fields,
    vector_key,
)
from patchstream.stores.vector.milvus_schema import (
    LAYOUT,
    create_chunks,
    create_files,
    create_vector_refs,
)
from patchstream.stores.vector.milvus_search import search_filter, visible


class MilvusVectorStore(FileRecordReads):
    """Chunk vectors for one embedder."""

    def __init__(
        self,
        uri: str,
        embedder: Embedder,
        collection_prefix: str = "patchstream_",
        token: str | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        try:
            connected = connect(uri, token or "", timeout_s)
        except (MilvusException, grpc.RpcError) as exc:  # typed: a caller may wait it out
            raise milvus_error("connect failed", exc) from exc
        self.client = DeadlinedClient(connected, timeout_s)
        self.embedder = embedder
        slug = "".join(c if c.isalnum() else "_" for c in embedder.name)
        self.chunks = f"{collection_prefix}chunks_{LAYOUT}_{slug}"
        self.files = f"{collection_prefix}files_{LAYOUT}_{slug}"
        self.vector_refs = f"{collection_prefix}vector_refs_{LAYOUT}_{slug}"
        # Where embeddings were kept by content hash before the refs: dropped once seen.
        self.old_vectors = f"{collection_prefix}vectors_{LAYOUT}_{slug}"

    # -- schema ---------------------------------------------------------------------------

    def ensure_schema(self) -> None:
        try:
            dim = self.embedder.dim
            for name, create in (
                (self.chunks, lambda: create_chunks(self.client, self.chunks, dim)),
                (self.files, lambda: create_files(self.client, self.files)),
                (self.vector_refs, lambda: create_vector_refs(self.client, self.vector_refs)),
            ):
                self._create_once(name, create)
            for name in (self.chunks, self.files, self.vector_refs):
                self.client.load(name)
            if self.client.has_collection(self.old_vectors):  # a cache: re-embedding refills
                self.client.drop_collection(self.old_vectors)
        except (MilvusException, grpc.RpcError) as exc:
            raise milvus_error("could not prepare collections", exc) from exc

    def _create_once(self, name: str, create: Any) -> None:
        """Create a collection unless it exists. The query service and the vector sink start
        together: the loser of that race gets "File exists" from Milvus Lite, and must go on
        with the collection the winner made instead of dying."""
        if self.client.has_collection(name):
            return
        try:
            create()
        except StoreRefused:
            for _ in range(50):  # the winner may still be creating it
                if self.client.has_collection(name):
                    return
                time.sleep(0.2)
            raise

    # -- writes ---------------------------------------------------------------------------

    def apply(self, deltas: Sequence[FileDelta], flush: bool = True) -> VectorApplyStats:
        """Apply a batch of deltas: one fence read, one embed call, one upsert, one flush
        (``flush=False`` leaves it to :meth:`flush`: reads see unflushed rows, and a writer
        that applies several batches before it commits flushes once)."""
        stats = VectorApplyStats()
        latest: dict[str, FileDelta] = {}
        for delta in deltas:
            fuid = file_uid(delta)
            held = latest.get(fuid)
            if held is None or delta.version > held.version:
                latest[fuid] = delta
            stats.files_stale += held is not None
        by_tenant: dict[str, list[FileDelta]] = {}
        for delta in latest.values():
            by_tenant.setdefault(delta.tenant, []).append(delta)
        try:
            for tenant, group in by_tenant.items():
                self._apply_tenant(tenant, group, stats)
        except (MilvusException, grpc.RpcError) as exc:
            raise milvus_error("write failed", exc) from exc
        if flush:
            self.flush()
        return stats

    def flush(self) -> None:
        """Seal what was written: durable in Milvus once this returns."""
        try:
            self.client.flush(self.chunks)
            self.client.flush(self.files)
        except (MilvusException, grpc.RpcError) as exc:
            raise milvus_error("flush failed", exc) from exc

    def _apply_tenant(self, tenant: str, deltas: list[FileDelta], stats: VectorApplyStats) -> None:
        records = self._file_records(tenant, [file_uid(d) for d in deltas])
        dropped = self.dropped_refs(tenant, {delta_scope(d) for d in deltas})
        fresh = [d for d in deltas if max(records.get(file_uid(d), (-1, None))[0],
                                          dropped.get(delta_scope(d), -1)) < d.version]  # fmt: skip
        stats.files_stale += len(deltas) - len(fresh)
        if not fresh:
            return
        stored = {fuid: rows for fuid, (_, rows) in records.items() if rows is not None}
        unlisted = [file_uid(d) for d in fresh
                    if file_uid(d) in records and records[file_uid(d)][1] is None]  # fmt: skip
        stored.update(self._stored_rows(tenant, unlisted))
        plan = plan_rows(fresh, stored)
        vectors, embedded_hashes = self._vectors(tenant, plan.texts_by_hash(), stats)
        per_file = credit_embeddings(fresh, plan.writes, embedded_hashes)
        rows: dict[str, dict[str, Any]] = {}
        refs: dict[str, str] = {}  # an embedded hash -> the first row written with it
        for w in plan.writes:
            rows[w.pk] = chunk_row(w.delta, w.chunk, w.pk, w.fp, vectors[w.chunk.content_hash])
            if w.chunk.content_hash in embedded_hashes:
                refs.setdefault(w.chunk.content_hash, w.pk)
        for batch in batches(plan.deletes):
            self.client.delete(self.chunks, filter=f"pk in {lit_list(batch)}")
        if rows:
            self.client.upsert(self.chunks, list(rows.values()))
        self._write_vector_refs(tenant, refs)
        now = time.time()
        self.client.upsert(
            self.files,
            [file_record(d, tenant, now, per_file[file_uid(d)], plan.final_rows[file_uid(d)])
             for d in fresh],
        )  # fmt: skip
        stats.files_applied += len(fresh)
        stats.rows_written += len(rows)
        stats.rows_deleted += len(plan.deletes)

    def _file_records(
        self, tenant: str, file_uids: list[str]
    ) -> dict[str, tuple[int, FileRows | None]]:
        """File uid -> (applied version, its chunk rows; None when not listed), by key."""
        found: dict[str, tuple[int, FileRows | None]] = {}
        keys = {file_key(fuid): fuid for fuid in file_uids}
        for batch in batches(sorted(keys)):
            for row in self.client.get(
                self.files,
                ids=batch,
                output_fields=["tenant", "file_uid", "version", "chunk_rows",
                               "chunk_rows_complete"],
            ):  # fmt: skip
                if row["tenant"] != tenant:
                    continue
                rows = None
                if row["chunk_rows_complete"]:
                    rows = FileRows(dict(item.split(":", 1) for item in row["chunk_rows"]))
                found[row["file_uid"]] = (int(row["version"]), rows)
        return found

    def file_rows(self, tenant: str, file_uid: str) -> dict[str, str]:
        """pk -> fp of one file's chunk rows, by a scan (for a file its record cannot list)."""
        return self._stored_rows(tenant, [file_uid]).get(file_uid, FileRows()).fps

    def _stored_rows(self, tenant: str, file_uids: list[str]) -> dict[str, FileRows]:
        found: dict[str, FileRows] = {}
        for batch in batches(file_uids):
            for row in self.query_all(
                f"tenant == {lit(tenant)} and file_uid in {lit_list(batch)}",
                ["pk", "file_uid", "fp"],
            ):
                found.setdefault(row["file_uid"], FileRows()).fps[row["pk"]] = row["fp"]
        return found

    def _vectors(
        self, tenant: str, texts_by_hash: dict[str, str], stats: VectorApplyStats
    ) -> tuple[dict[str, list[float]], set[str]]:
        """Vectors for content hashes, reused from the tenant's rows or embedded (the second
        item: the hashes that had to be embedded). Two reads by key: each hash's ref, then
        the chunk rows they name; a ref whose row is gone or now holds other content (its
        chunk was edited, its ref deleted) is a miss, and the hash is embedded again."""
        vectors: dict[str, list[float]] = {}
        hashes = sorted(texts_by_hash)
        rows_of: dict[str, str] = {}  # chunk pk -> the content hash it should hold
        keys = [vector_key(tenant, h) for h in hashes]
        for batch in batches(keys):
            fields = ["tenant", "content_hash", "chunk_pk"]
            for row in self.client.get(self.vector_refs, ids=batch, output_fields=fields):
                if row["tenant"] == tenant:
                    rows_of[str(row["chunk_pk"])] = str(row["content_hash"])
        fields, dim = ["pk", "tenant", "content_hash", "codes"], self.embedder.dim
        for batch in batches(sorted(rows_of)):
            for row in self.client.get(self.chunks, ids=batch, output_fields=fields):
                wanted = rows_of.get(str(row["pk"]))
                if wanted is not None and (row["tenant"], row["content_hash"]) == (tenant, wanted):
                    vectors[wanted] = decoded_vector(str(row["codes"]), dim)
        missing = [h for h in hashes if h not in vectors]
        stats.chunks_reused += len(hashes) - len(missing)
        if missing:
            started = time.perf_counter()
            embedded = self.embedder.embed([texts_by_hash[h] for h in missing])
            stats.embed_seconds += time.perf_counter() - started
            stats.chunks_embedded += len(missing)
            vectors.update(zip(missing, embedded, strict=True))
        return vectors, set(missing)

    def _write_vector_refs(self, tenant: str, refs: dict[str, str]) -> None:
        """Content hash -> the chunk row just written with its embedding (after the rows:
        a ref never names a row that is not there yet)."""
        if refs:
            self.client.upsert(
                self.vector_refs,
                [{"pk": vector_key(tenant, h), "tenant": tenant, "content_hash": h,
                  "chunk_pk": pk, "unused": [0.0, 0.0]} for h, pk in sorted(refs.items())],
            )  # fmt: skip

    def fence_dropped_ref(self, tenant: str, repo: str, ref: str, version: int) -> None:
        """See ``milvus_plan.tombstone_record``; sealed before it returns."""
        scope = scope_of(tenant, repo, ref)
        self.client.upsert(self.files, [tombstone_record(tenant, scope, version, time.time())])
        self.client.flush(self.files)

    def dropped_refs(self, tenant: str, scopes: set[str]) -> dict[str, int]:
        """Scope -> the version its ref was dropped at, for those of ``scopes`` dropped."""
        keys = [file_key(tombstone_uid(scope)) for scope in sorted(scopes)]
        rows = self.client.get(self.files, ids=keys, output_fields=["tenant", "scope", "version"])
        return {row["scope"].removeprefix(tombstone_uid("")): int(row["version"]) for row in rows
                if row["tenant"] == tenant + TOMBSTONE_TENANT_MARK}  # fmt: skip

    def delete_ref(self, tenant: str, repo: str, ref: str) -> None:
        if not tenant:
            return
        scope = scope_of(tenant, repo, ref)
        where = f"tenant == {lit(tenant)} and scope == {lit(scope)}"
        self.client.delete(self.chunks, filter=where)
        self.client.delete(self.files, filter=where)
        self.client.flush(self.chunks)
        self.client.flush(self.files)

    # -- reads ----------------------------------------------------------------------------

    def search(
        self,
        tenant: str,
        query: str,
        limit: int = 10,
        repo: str | None = None,
        ref: str | None = None,
        path_prefix: str | None = None,
        kind: str | None = None,
        view: View | None = None,
    ) -> list[SearchHit]:
        """BM25 over the rows' text (Milvus keeps no dense vector to rank by: the query
        service's search copy fuses dense and lexical ranks; this answers while it cannot).
        With a ``view`` (an overlay), the layers' rows that the view sees; a plain ``ref``
        never returns an overlay's rows."""
        if not tenant or not query.strip():
            return []
        wanted = limit
        where, limit = search_filter(tenant, limit, repo, ref, path_prefix, kind, view)
        try:
            result = self.client.search(
                self.chunks,
                data=[query],
                anns_field="sparse",
                filter=where,
                limit=limit,
                output_fields=search_fields(),
            )
        except (MilvusException, grpc.RpcError) as exc:
            raise milvus_error("search failed", exc) from exc
        hits = [hit_from_row(hit["entity"], float(hit["distance"]))
                for hit in (result[0] if result else [])
                if visible(hit["entity"], tenant, repo, path_prefix, view)]  # fmt: skip
        return hits[:wanted]

    def chunks_for_symbols(
        self, tenant: str, symbol_ids: Sequence[str], ref: str | None = None
    ) -> list[SearchHit]:
        """Every chunk owned by the given symbols, in file order."""
        if not tenant or not symbol_ids:
            return []
        where = f"tenant == {lit(tenant)} and symbol_id in {lit_list(symbol_ids)}"
        if ref:
            where += f" and ref == {lit(ref)}"
        fields = search_fields()
        rows = self.client.query(self.chunks, filter=where, output_fields=fields,
                                 limit=QUERY_LIMIT)  # fmt: skip
        hits = [hit_from_row(row, 0.0) for row in rows if row.get("tenant") == tenant]
        return sorted(hits, key=lambda h: (h.path, h.start_line, h.chunk_id))

    def last_applied(self, tenant: str, repo: str | None = None) -> tuple[int, float | None]:
        """(files, newest applied_at) of the tenant, or of one repository."""
        if not tenant:
            return (0, None)
        where = f"tenant == {lit(tenant)}"
        if repo:
            where += (
                f" and file_uid like {lit(scope_of(tenant, repo, '').rsplit('|', 1)[0] + '|%')}"
            )
        rows = self.client.query(self.files, filter=where, output_fields=["applied_at"],
                                 limit=QUERY_LIMIT)  # fmt: skip
        times = [float(r["applied_at"]) for r in rows]
        return (len(times), max(times) if times else None)

    def rows(self, tenant: str) -> set[tuple[str, ...]]:
        """Every row of a tenant, without vectors (tests compare stores with it)."""
        if not tenant:
            return set()
        fields = ["pk", "file_uid", "chunk_id", "symbol_id", "content_hash", "start_line",
                  "end_line", "kind", "text"]  # fmt: skip
        return {
            tuple(str(row[f]) for f in fields)
            for row in self.query_all(f"tenant == {lit(tenant)}", fields)
        }

    def drop(self) -> None:
        for name in (self.chunks, self.files, self.vector_refs, self.old_vectors):
            if self.client.has_collection(name):
                self.client.drop_collection(name)

    def close(self) -> None:
        self.client.close()
