"""The code graph: a :class:`GraphStore` interface and its FalkorDB and Memgraph adapters."""

from patchstream.stores.graph.base import (
    ApplyResult,
    FileVersion,
    GraphSnapshot,
    GraphStore,
    Neighbor,
    RepoVersion,
    StoredSymbol,
)

__all__ = [
    "ApplyResult",
    "FileVersion",
    "GraphSnapshot",
    "GraphStore",
    "Neighbor",
    "RepoVersion",
    "StoredSymbol",
]
