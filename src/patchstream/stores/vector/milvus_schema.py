"""The three collections of a Milvus vector store, and the dense index of the chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymilvus import DataType, Function, FunctionType, MilvusClient

from patchstream.stores.vector.milvus_client import DeadlinedClient
from patchstream.stores.vector.milvus_rows import MAX_FILE_ROWS

# Collection layout version: a layout change gets new collections (re-index after upgrading).
LAYOUT = "v2"


@dataclass(frozen=True)
class DenseIndex:
    """The dense vector index of new chunk collections. An HNSW graph: on Milvus Lite,
    AUTOINDEX searched 43k rows in 155 ms and HNSW in 32 ms (recall@10 0.94 against it). Over
    8-bit codes by default (HNSW_SQ): Milvus Lite keeps each segment's float32 vectors in its
    Arrow table already, and the index's own copy was a third of its memory
    (``bench/milvus_index.py``)."""

    kind: str = "HNSW_SQ"
    m: int = 16
    ef_construction: int = 128
    ef: int = 128

    @property
    def graph(self) -> bool:
        """An HNSW graph (over float32 vectors, or over 8-bit codes with HNSW_SQ)."""
        return self.kind in ("HNSW", "HNSW_SQ")

    def index_params(self) -> dict[str, int]:
        return {"M": self.m, "efConstruction": self.ef_construction} if self.graph else {}

    def search_params(self, limit: int) -> dict[str, Any]:
        return {"params": {"ef": max(self.ef, limit)}} if self.graph else {}


def create_chunks(client: DeadlinedClient, name: str, dim: int, dense_index: DenseIndex) -> None:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("tenant", DataType.VARCHAR, max_length=128, is_partition_key=True)
    for field, length in (
        ("scope", 512), ("repo", 256), ("ref", 256), ("path", 2048), ("file_uid", 2560),
        ("chunk_id", 4096), ("symbol_id", 4096), ("kind", 32), ("source", 32),
        ("language", 32), ("content_hash", 64), ("fp", 64),
    ):  # fmt: skip
        schema.add_field(field, DataType.VARCHAR, max_length=length)
    for field in ("start_line", "end_line", "tokens", "version"):
        schema.add_field(field, DataType.INT64)
    schema.add_field("text", DataType.VARCHAR, max_length=65_535, enable_analyzer=True)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="text_bm25",
            input_field_names=["text"],
            output_field_names=["sparse"],
            function_type=FunctionType.BM25,
        )
    )
    index = client.prepare_index_params()
    index.add_index(field_name="dense", index_type=dense_index.kind,
                    metric_type="COSINE", params=dense_index.index_params())  # fmt: skip
    index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection(name, schema=schema, index_params=index)


def create_files(client: DeadlinedClient, name: str) -> None:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("tenant", DataType.VARCHAR, max_length=128, is_partition_key=True)
    schema.add_field("file_uid", DataType.VARCHAR, max_length=2560)
    schema.add_field("scope", DataType.VARCHAR, max_length=512)
    schema.add_field("version", DataType.INT64)
    schema.add_field("deleted", DataType.BOOL)
    schema.add_field("applied_at", DataType.DOUBLE)
    schema.add_field("path", DataType.VARCHAR, max_length=2048)
    schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("chunks_embedded", DataType.INT64)
    schema.add_field("chunks_reused", DataType.INT64)
    schema.add_field("chunk_rows", DataType.ARRAY, element_type=DataType.VARCHAR,
                     max_capacity=MAX_FILE_ROWS, max_length=80)  # fmt: skip
    schema.add_field("chunk_rows_complete", DataType.BOOL)
    # Milvus needs a vector field in every collection; this one is never searched.
    schema.add_field("unused", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index(field_name="unused", index_type="AUTOINDEX", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index)


def create_vector_refs(client: DeadlinedClient, name: str) -> None:
    """For each ``xxh3(tenant|content hash)``, the chunk row that holds its embedding: read
    by key, never searched. It used to hold the embedding itself, a second float32 copy of
    every vector the chunks collection holds (1.6 KB a row of Milvus Lite's memory)."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("tenant", DataType.VARCHAR, max_length=128)
    schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("chunk_pk", DataType.VARCHAR, max_length=64)
    # Milvus needs a vector field in every collection; this one is never searched.
    schema.add_field("unused", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index(field_name="unused", index_type="FLAT", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index)
