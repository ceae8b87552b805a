"""The vector index of code chunks (Milvus), with embedding reuse by content hash.

Import the modules themselves (``stores.vector.milvus``, ``.milvus_rows``, ...): this package
imports nothing, because pymilvus brings pandas and pyarrow (~90 MiB of a process's memory)
and the parse workers and the graph sink never talk to Milvus.
"""
