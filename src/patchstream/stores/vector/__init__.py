"""The vector index of code chunks (Milvus), with embedding reuse by content hash."""

from patchstream.stores.vector.milvus import MilvusVectorStore, SearchHit, VectorApplyStats

__all__ = ["MilvusVectorStore", "SearchHit", "VectorApplyStats"]
