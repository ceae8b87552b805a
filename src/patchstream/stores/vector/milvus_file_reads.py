"""The Milvus store's reads of its file records (each file's applied version, hash and
embedding counts, per branch) and the paged query they and the audits use."""

from __future__ import annotations

import logging
from typing import Any

import grpc
from pymilvus import MilvusException

from patchstream.stores.graph.keys import scope_of
from patchstream.stores.vector.milvus_client import NOT_LOADED, DeadlinedClient, lit, milvus_error

QUERY_LIMIT = 16_384

# Milvus Lite has no timestamp service: each query iterator warns that it falls back on the
# client's clock, which is what Lite means, in every `index` and `up` a user runs. Set here,
# after pymilvus's import, which resets its loggers' levels.
logging.getLogger("pymilvus.client.iterator.query_iterator").setLevel(logging.ERROR)


class FileRecordReads:
    """Mixed into ``MilvusVectorStore``, whose collections these name."""

    client: DeadlinedClient
    chunks: str
    files: str

    def count_applied(self, tenant: str, repo: str, ref: str, min_version: int) -> int:
        """Files of a branch whose applied version is >= ``min_version``."""
        if not tenant:
            return 0
        scope = scope_of(tenant, repo, ref)
        rows = self.client.query(
            self.files,
            filter=f"tenant == {lit(tenant)} and scope == {lit(scope)} "
            f"and version >= {int(min_version)}",
            output_fields=["count(*)"],
        )
        return int(rows[0]["count(*)"]) if rows else 0

    def file_version(self, tenant: str, repo: str, ref: str, path: str) -> int | None:
        """The applied version of one file, or None."""
        if not tenant:
            return None
        fuid = f"{scope_of(tenant, repo, ref)}|{path}"
        rows = self.client.query(
            self.files,
            filter=f"tenant == {lit(tenant)} and file_uid == {lit(fuid)}",
            output_fields=["version"],
            limit=1,
        )
        return int(rows[0]["version"]) if rows else None

    def embed_counts(self, tenant: str, repo: str, ref: str, min_version: int) -> tuple[int, int]:
        """(chunks embedded, chunks reused) by the files applied at ``min_version`` or later."""
        if not tenant:
            return (0, 0)
        scope = scope_of(tenant, repo, ref)
        rows = self.client.query(
            self.files,
            filter=f"tenant == {lit(tenant)} and scope == {lit(scope)} "
            f"and version >= {int(min_version)}",
            output_fields=["chunks_embedded", "chunks_reused"],
            limit=QUERY_LIMIT,
        )
        return (
            sum(int(r["chunks_embedded"]) for r in rows),
            sum(int(r["chunks_reused"]) for r in rows),
        )

    def file_hashes(self, tenant: str, repo: str, ref: str) -> dict[str, str]:
        """Path -> content hash of every live file of a branch (for reconcile scans)."""
        if not tenant:
            return {}
        scope = scope_of(tenant, repo, ref)
        where = f"tenant == {lit(tenant)} and scope == {lit(scope)} and deleted == false"
        rows = self.query_all(where, ["path", "content_hash"], collection=self.files)
        return {row["path"]: row["content_hash"] for row in rows}

    def file_versions(self, tenant: str, repo: str, ref: str) -> dict[str, int]:
        """Path -> applied version of every file of a branch, deleted ones included."""
        if not tenant:
            return {}
        where = f"tenant == {lit(tenant)} and scope == {lit(scope_of(tenant, repo, ref))}"
        rows = self.query_all(where, ["path", "version"], collection=self.files)
        return {row["path"]: int(row["version"]) for row in rows}

    def query_all(
        self, where: str, fields: list[str], collection: str | None = None
    ) -> list[dict[str, Any]]:
        """Every row of ``collection`` (the chunks by default) matching ``where``."""
        name = collection or self.chunks
        for attempt in range(2):
            rows: list[dict[str, Any]] = []
            iterator = self.client.query_iterator(
                name, batch_size=1000, filter=where, output_fields=fields
            )
            try:
                # The iterator's pages are calls of its own, past the client's wrapper: a
                # Milvus restarted between them holds the collection released (the restart
                # soak's round 21 failed an index on it), and its errors are untyped.
                while batch := iterator.next():
                    rows.extend(batch)
                return rows
            except MilvusException as exc:
                if exc.code != NOT_LOADED or attempt:
                    raise milvus_error(f"query of {name} failed", exc) from exc
                self.client.load(name)
            except grpc.RpcError as exc:
                raise milvus_error(f"query of {name} failed", exc) from exc
            finally:
                iterator.close()
        raise AssertionError("unreachable: the second attempt returns or raises")
