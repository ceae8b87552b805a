"""Per-file state and the ``file-deltas`` contract between the parse stage and the sinks."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from patchstream.schemas.chunks import Chunk
from patchstream.schemas.events import Source
from patchstream.schemas.graph import Edge, Symbol


class FileFlags(BaseModel):
    """Why a file's structure may be partial. All false means a clean, complete extraction."""

    model_config = ConfigDict(frozen=True)

    has_errors: bool = Field(
        default=False, description="syntax errors; last good symbols kept where affected"
    )
    too_large: bool = Field(default=False, description="over the size cap; File node only")
    binary: bool = Field(default=False, description="NUL bytes; File node only")
    not_utf8: bool = Field(default=False, description="decoded with replacement characters")
    parse_timeout: bool = Field(default=False, description="parse budget exceeded; previous kept")

    def raised(self) -> list[str]:
        return [name for name, value in self.model_dump().items() if value]


class FileState(BaseModel):
    """Everything derived from one version of one file. A pure function of (previous, content)."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = 1
    tenant: str
    repo: str
    ref: str
    workspace: str | None = None
    path: str
    version: int = Field(ge=0)
    language: str | None = None
    content_hash: str
    size_bytes: int = Field(ge=0)
    flags: FileFlags = Field(default_factory=FileFlags)
    symbols: tuple[Symbol, ...] = ()
    edges: tuple[Edge, ...] = ()
    chunks: tuple[Chunk, ...] = ()


class FileDelta(BaseModel):
    """What a sink needs to move one file from its previous state to the new one.

    ``op=delete`` removes everything of ``path``. For ``op=upsert`` the lists say which
    symbols, edges and chunks to write and which to drop; ``new_chunk_hashes`` are content
    hashes the previous state did not have (candidates for embedding; the vector sink still
    reuses vectors stored for the same hash in the tenant). A sink ignores a delta whose
    ``version`` is not newer than the version it applied for the file.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = 1
    event_id: str
    tenant: str
    repo: str
    ref: str
    workspace: str | None = None
    path: str
    op: Literal["upsert", "delete"]
    version: int = Field(ge=0)
    language: str | None = None
    content_hash: str | None = None
    size_bytes: int = Field(default=0, ge=0)
    flags: FileFlags = Field(default_factory=FileFlags)
    symbols_upsert: tuple[Symbol, ...] = ()
    symbol_ids_remove: tuple[str, ...] = ()
    edges_add: tuple[Edge, ...] = ()
    edges_remove: tuple[Edge, ...] = ()
    chunks_upsert: tuple[Chunk, ...] = ()
    chunk_ids_remove: tuple[str, ...] = ()
    new_chunk_hashes: tuple[str, ...] = ()
    source: Source = "cli"
    actor: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    commit: str | None = None
    batch_id: str | None = None
    occurred_at: datetime | None = Field(
        default=None, description="when the change happened at its source, for sync lag"
    )
