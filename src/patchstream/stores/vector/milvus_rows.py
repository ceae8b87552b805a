"""Chunk rows of the Milvus chunks collection, built and read back: pure, no I/O."""

from __future__ import annotations

import marshal
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.prose import PROSE_LANGUAGE, prose_source
from patchstream.schemas.chunks import Chunk
from patchstream.schemas.state import FileDelta
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.vector.dense_codes import encode

_TEXT_BYTES = 60_000
# Chunk rows a file record lists; a file with more falls back to a scan of its rows.
MAX_FILE_ROWS = 4096
_IN_BATCH = 256
_ROW_FIELDS = [
    "pk", "tenant", "scope", "repo", "ref", "path", "file_uid", "chunk_id", "symbol_id",
    "kind", "source", "language", "content_hash", "start_line", "end_line", "tokens",
    "version", "fp", "text",
]  # fmt: skip


@dataclass
class VectorApplyStats:
    files_applied: int = 0
    files_stale: int = 0
    rows_written: int = 0
    rows_deleted: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    embed_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class SearchHit:
    score: float
    chunk_id: str
    symbol_id: str
    repo: str
    ref: str
    path: str
    kind: str
    source: str
    start_line: int
    end_line: int
    content_hash: str
    version: int
    text: str


@dataclass
class FileRows:
    fps: dict[str, str] = field(default_factory=dict)  # pk -> fp


def search_fields() -> list[str]:
    """The fields a search hit is made of."""
    return [f for f in _ROW_FIELDS if f != "fp"]


def vector_key(tenant: str, content_hash: str) -> str:
    return hash_bytes(f"{tenant}|{content_hash}".encode())


def file_key(file_uid: str) -> str:
    """The primary key of a file's record in the files collection."""
    return hash_bytes(file_uid.encode())


def listed_rows(rows: dict[str, str]) -> list[str]:
    """A file's chunk rows as ``pk:fp`` items (none when there are too many to list)."""
    return [f"{pk}:{fp}" for pk, fp in sorted(rows.items())] if rows_listable(rows) else []


def rows_listable(rows: dict[str, str]) -> bool:
    """Whether a file record can list all of the file's chunk rows."""
    return len(rows) <= MAX_FILE_ROWS


_PACKED = [f.name for f in fields(SearchHit)][1:]  # every field but the score


def pack_hit(hit: SearchHit) -> bytes:
    """``hit`` as one compressed bytes object, for the search copy to hold: a row's hit as
    thirteen Python objects was ~1.35 KB (the text ~0.45 KB of it, mostly the objects'
    headers), packed ~0.4 KB; unpacking one takes a few microseconds, and a search unpacks
    only its winners."""
    return zlib.compress(marshal.dumps(tuple(getattr(hit, name) for name in _PACKED)), 1)


def unpack_hit(packed: bytes, score: float) -> SearchHit:
    """The hit ``pack_hit`` packed (bytes this process made, never input), with ``score``."""
    return SearchHit(score, *marshal.loads(zlib.decompress(packed)))


def hit_from_row(entity: dict[str, Any], score: float) -> SearchHit:
    return SearchHit(
        score=score,
        chunk_id=entity["chunk_id"],
        symbol_id=entity["symbol_id"],
        repo=entity["repo"],
        ref=str(entity["scope"]).split("|", 2)[2] if entity.get("scope") else entity["ref"],
        path=entity["path"],
        kind=entity["kind"],
        source=entity["source"],
        start_line=int(entity["start_line"]),
        end_line=int(entity["end_line"]),
        content_hash=entity["content_hash"],
        version=int(entity["version"]),
        text=entity["text"],
    )


def delta_scope(delta: FileDelta) -> str:
    return scope_of(delta.tenant, delta.repo, delta.ref, delta.workspace)


def file_uid(delta: FileDelta) -> str:
    return f"{delta_scope(delta)}|{delta.path}"


def row_fp(delta: FileDelta, chunk: Chunk) -> str:
    # Not the version: a chunk that did not change keeps its row (and the version it was
    # written at) instead of being rewritten for every edit elsewhere in the file.
    return hash_bytes(f"{chunk.model_dump_json()}|{delta.language}".encode())


def chunk_row(
    delta: FileDelta, chunk: Chunk, pk: str, fp: str, vector: list[float]
) -> dict[str, Any]:
    text = chunk.text.encode("utf-8")[:_TEXT_BYTES].decode("utf-8", "ignore")
    return {
        "pk": pk,
        "tenant": delta.tenant,
        "scope": scope_of(delta.tenant, delta.repo, delta.ref, delta.workspace),
        "repo": delta.repo,
        "ref": delta.ref,
        "path": delta.path,
        "file_uid": file_uid(delta),
        "chunk_id": chunk.id,
        "symbol_id": chunk.symbol_id,
        "kind": chunk.kind.value,
        "source": prose_source(delta.path) if delta.language == PROSE_LANGUAGE else "code",
        "language": delta.language or "",
        "content_hash": chunk.content_hash,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "tokens": chunk.tokens,
        "version": delta.version,
        "fp": fp,
        "text": text,
        "codes": encode(vector),
        "unused": [0.0, 0.0],
    }


def batches(values: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), _IN_BATCH):
        yield list(values[start : start + _IN_BATCH])
