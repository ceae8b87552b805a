"""Versioned message contracts (pydantic v2). JSON Schema copies live in top-level ``schemas/``."""

from patchstream.schemas.chunks import Chunk
from patchstream.schemas.events import BlobRef, EditHint, PatchEvent
from patchstream.schemas.graph import Edge, EdgeType, Reference, Symbol, SymbolKind
from patchstream.schemas.state import FileDelta, FileFlags, FileState

__all__ = [
    "BlobRef",
    "Chunk",
    "Edge",
    "EdgeType",
    "EditHint",
    "FileDelta",
    "FileFlags",
    "FileState",
    "PatchEvent",
    "Reference",
    "Symbol",
    "SymbolKind",
]
