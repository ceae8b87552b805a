"""Per-file state and the ``file-deltas`` contract between the parse stage and the sinks."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from patchstream.schemas.chunks import Chunk
from patchstream.schemas.discussions import DiscussionInfo
from patchstream.schemas.events import Source
from patchstream.schemas.graph import Edge, Symbol
from patchstream.schemas.history import SHA, CommitInfo


class FileFlags(BaseModel):
    """Why a file's structure may be partial. All false means a clean, complete extraction."""

    model_config = ConfigDict(frozen=True)

    has_errors: bool = Field(
        default=False, description="syntax errors; last good symbols kept where affected"
    )
    too_large: bool = Field(default=False, description="over the size cap; File node only")
    binary: bool = Field(
        default=False, description="NUL bytes or a binary format's signature; File node only"
    )
    secret: bool = Field(
        default=False, description="a key or credential (by name or content); File node only"
    )
    not_utf8: bool = Field(default=False, description="decoded with replacement characters")
    parse_timeout: bool = Field(default=False, description="parse budget exceeded; previous kept")
    parse_failed: bool = Field(
        default=False,
        description="the sandboxed parser crashed, hung or ran out of memory on this content "
        "twice; previous kept, the reason in the dead-letter queue",
    )
    no_grammar: bool = Field(
        default=False,
        description="no parser for this file's language: its text is searchable as plain "
        "text, without symbols or edges",
    )

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
    commit_info: CommitInfo | None = Field(default=None, description="a _commits/<sha>.md file's")
    discussion_info: DiscussionInfo | None = Field(
        default=None, description="a _discussions/ page's: an issue, a PR/MR or a note on one"
    )
    history_head: str | None = Field(
        default=None, pattern=SHA.pattern, description="the sha _commits/HEAD names"
    )


class FileDelta(BaseModel):
    """What a sink needs to move one file from its previous state to the new one.

    ``op=delete`` removes everything of ``path``. An ``op=upsert`` carries the complete new
    state (``symbols``, ``edges``, ``chunks``) and its difference from ``base_version``, the
    state the parse stage diffed against (``None``: nothing). A sink applies it one of two
    ways, both ending in the same stored state:

    - incrementally, when it holds exactly ``base_version`` of the file: write the
      ``*_upsert`` ids (looked up in the complete lists), drop the ``*_remove`` ones, add and
      remove the listed edges;
    - by replacement otherwise (a delivery was skipped, duplicated or reordered): make the
      file's stored symbols, edges and chunks equal to the complete lists.

    ``new_chunk_hashes`` are content hashes ``base_version`` did not have: candidates for
    embedding (the vector sink still reuses vectors stored for the same hash in the tenant).
    A sink ignores a delta whose ``version`` is not newer than the one it applied.

    Against nothing (``base_version`` None) everything is new, and the four lists that would
    repeat the complete state (``symbol_ids_upsert``, ``edges_add``, ``chunk_ids_upsert``,
    ``new_chunk_hashes``) are left empty on the wire: a cold index's deltas carried every edge
    twice (a third of their bytes, and of the sinks' decoding). Read them through
    ``upserted_symbols``, ``added_edges``, ``upserted_chunks`` and ``embedding_candidates``,
    which take the complete lists then (a producer that fills them anyway is read the same).
    """

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = 1
    event_id: str
    tenant: str
    repo: str
    ref: str
    workspace: str | None = None
    base_ref: str | None = Field(default=None, description="the ref overlays this branch")
    closes_overlay: bool = False
    path: str
    op: Literal["upsert", "delete"]
    version: int = Field(ge=0)
    base_version: int | None = Field(default=None, ge=0)
    language: str | None = None
    content_hash: str | None = None
    size_bytes: int = Field(default=0, ge=0)
    flags: FileFlags = Field(default_factory=FileFlags)
    symbols: tuple[Symbol, ...] = Field(default=(), description="complete new state")
    edges: tuple[Edge, ...] = Field(default=(), description="complete new state")
    chunks: tuple[Chunk, ...] = Field(default=(), description="complete new state")
    commit_info: CommitInfo | None = Field(default=None, description="a _commits/<sha>.md file's")
    discussion_info: DiscussionInfo | None = Field(
        default=None, description="a _discussions/ page's: an issue, a PR/MR or a note on one"
    )
    history_head: str | None = Field(
        default=None, pattern=SHA.pattern, description="the sha _commits/HEAD names"
    )
    symbol_ids_upsert: tuple[str, ...] = Field(
        default=(),
        description="ids of new or changed symbols (empty when base_version is None: all)",
    )
    symbol_ids_remove: tuple[str, ...] = ()
    edges_add: tuple[Edge, ...] = Field(
        default=(), description="edges base_version lacks (empty when base_version is None: all)"
    )
    edges_remove: tuple[Edge, ...] = ()
    chunk_ids_upsert: tuple[str, ...] = Field(
        default=(),
        description="ids of new or changed chunks (empty when base_version is None: all)",
    )
    chunk_ids_remove: tuple[str, ...] = ()
    new_chunk_hashes: tuple[str, ...] = Field(
        default=(),
        description="content hashes base_version lacks (empty when base_version is None: all)",
    )
    source: Source = "cli"
    actor: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    commit: str | None = None
    batch_id: str | None = None
    occurred_at: datetime | None = Field(
        default=None, description="when the change happened at its source, for sync lag"
    )

    def upserted_symbols(self) -> list[Symbol]:
        if self.base_version is None:
            return list(self.symbols)
        wanted = set(self.symbol_ids_upsert)
        return [s for s in self.symbols if s.id in wanted]

    def added_edges(self) -> tuple[Edge, ...]:
        return self.edges if self.base_version is None else self.edges_add

    def upserted_chunks(self) -> list[Chunk]:
        if self.base_version is None:
            return list(self.chunks)
        wanted = set(self.chunk_ids_upsert)
        return [c for c in self.chunks if c.id in wanted]

    def embedding_candidates(self) -> list[str]:
        """Content hashes ``base_version`` did not have (against nothing: every chunk's)."""
        if self.base_version is None:
            return sorted({c.content_hash for c in self.chunks})
        return list(self.new_chunk_hashes)
