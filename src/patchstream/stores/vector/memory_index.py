"""The retrieval index of long-term memory in Milvus: one row per memory, keyed by it.

Milvus is never the record: it holds the memory's embedding, its text for BM25, and the
fields retrieval filters on (tenant, owner, visibility). Deleting a memory deletes its row;
``ids`` lets tests and audits check that nothing is left.
"""

from __future__ import annotations

from typing import Any

from pymilvus import AnnSearchRequest, DataType, Function, FunctionType, MilvusClient, RRFRanker

from patchstream.parsing.hashing import hash_bytes
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.milvus_client import lit, lit_list


def _pk(tenant: str, memory_id: str) -> str:
    return hash_bytes(f"{tenant}|memory|{memory_id}".encode())


class MilvusMemoryIndex:
    def __init__(self, vectors: MilvusVectorStore, collection_prefix: str = "patchstream_") -> None:
        self.client = vectors.client
        self.embedder = vectors.embedder
        slug = "".join(c if c.isalnum() else "_" for c in self.embedder.name)
        self.collection = f"{collection_prefix}memories_v1_{slug}"
        self._ready = False

    def ensure_schema(self) -> None:
        if self._ready:
            return
        if not self.client.has_collection(self.collection):
            schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=64)
            schema.add_field("tenant", DataType.VARCHAR, max_length=128, is_partition_key=True)
            schema.add_field("memory_id", DataType.VARCHAR, max_length=128)
            schema.add_field("owner", DataType.VARCHAR, max_length=200)
            schema.add_field("visibility", DataType.VARCHAR, max_length=16)
            schema.add_field("text", DataType.VARCHAR, max_length=65_535, enable_analyzer=True)
            schema.add_field("dense", DataType.FLOAT_VECTOR, dim=self.embedder.dim)
            schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
            schema.add_function(
                Function(
                    name="memory_bm25",
                    input_field_names=["text"],
                    output_field_names=["sparse"],
                    function_type=FunctionType.BM25,
                )
            )
            index = self.client.prepare_index_params()
            index.add_index(field_name="dense", index_type="FLAT", metric_type="COSINE")
            index.add_index(
                field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
            )
            self.client.create_collection(self.collection, schema=schema, index_params=index)
        self.client.load(self.collection)
        self._ready = True

    def upsert(self, tenant: str, memory_id: str, owner: str, visibility: str, text: str) -> None:
        self.ensure_schema()
        row = {
            "pk": _pk(tenant, memory_id),
            "tenant": tenant,
            "memory_id": memory_id,
            "owner": owner,
            "visibility": visibility,
            "text": text,
            "dense": self.embedder.embed([text])[0],
        }
        self.client.upsert(self.collection, [row])

    def delete(self, tenant: str, memory_ids: list[str]) -> None:
        if memory_ids:
            self.ensure_schema()
            self.client.delete(self.collection, ids=[_pk(tenant, m) for m in memory_ids])

    def search(self, tenant: str, query: str, user: str | None, limit: int) -> list[str]:
        """Memory ids by relevance; only shared memories and the ``user``'s own private ones."""
        self.ensure_schema()
        visible = "visibility == 'shared'"
        if user:
            visible = f"({visible} or owner == {lit(user)})"
        where = f"tenant == {lit(tenant)} and {visible}"
        requests = [
            AnnSearchRequest(
                data=[self.embedder.embed([query])[0]],
                anns_field="dense",
                param={},
                limit=limit,
                expr=where,
            ),
            AnnSearchRequest(data=[query], anns_field="sparse", param={}, limit=limit, expr=where),
        ]
        result = self.client.hybrid_search(
            self.collection,
            requests,
            ranker=RRFRanker(60),
            limit=limit,
            output_fields=["tenant", "memory_id"],
        )
        hits: list[dict[str, Any]] = list(result[0]) if result else []
        return [h["entity"]["memory_id"] for h in hits if h["entity"].get("tenant") == tenant]

    def ids(self, tenant: str, memory_ids: list[str] | None = None) -> set[str]:
        """The memory ids the index holds for ``tenant`` (all, or of ``memory_ids``)."""
        self.ensure_schema()
        where = f"tenant == {lit(tenant)}"
        if memory_ids is not None:
            if not memory_ids:
                return set()
            where += f" and memory_id in {lit_list(memory_ids)}"
        rows = self.client.query(
            self.collection, filter=where, output_fields=["memory_id"], limit=16_384
        )
        return {str(r["memory_id"]) for r in rows}

    def drop(self) -> None:
        if self.client.has_collection(self.collection):
            self.client.drop_collection(self.collection)
        self._ready = False
