"""The vector index of code chunks (Milvus), with embedding reuse by content hash."""

from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.milvus_rows import SearchHit, VectorApplyStats

__all__ = ["MilvusVectorStore", "SearchHit", "VectorApplyStats"]
