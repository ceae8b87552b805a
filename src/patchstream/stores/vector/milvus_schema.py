"""The three collections of a Milvus vector store."""

from __future__ import annotations

from pymilvus import DataType, Function, FunctionType, MilvusClient

from patchstream.stores.vector.dense_codes import encoded_length
from patchstream.stores.vector.milvus_client import DeadlinedClient
from patchstream.stores.vector.milvus_rows import MAX_FILE_ROWS

# Collection layout version: a layout change gets new collections (re-index after upgrading).
# v3: a chunk's embedding as int8 codes (``dense_codes``), no float32 vector, no dense index.
LAYOUT = "v3"


def create_chunks(client: DeadlinedClient, name: str, dim: int) -> None:
    """Chunk rows: keys, text (BM25 through Milvus's function, for a search the query
    service's copy cannot answer yet) and the embedding as int8 codes. Dense search is the
    copy's: Milvus keeps no float32 vector and no dense index (``dense_codes``)."""
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
    schema.add_field("codes", DataType.VARCHAR, max_length=encoded_length(dim))
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    # Milvus needs a dense vector field in a collection; this one is never searched.
    schema.add_field("unused", DataType.FLOAT_VECTOR, dim=2)
    schema.add_function(
        Function(
            name="text_bm25",
            input_field_names=["text"],
            output_field_names=["sparse"],
            function_type=FunctionType.BM25,
        )
    )
    index = client.prepare_index_params()
    index.add_index(field_name="unused", index_type="FLAT", metric_type="L2")
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
