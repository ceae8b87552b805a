"""File deltas: the difference between two states of one file, and applying it back.

``apply_delta(previous, diff_states(previous, new)) == new`` for any two states of a file;
the property tests hold us to it.
"""

from __future__ import annotations

from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.graph import Edge
from patchstream.schemas.state import FileDelta, FileState

_PROVENANCE = ("source", "actor", "session_id", "run_id", "commit", "batch_id", "occurred_at",
               "base_ref", "closes_overlay")  # fmt: skip


def _provenance(event: PatchEvent | None) -> dict[str, object]:
    if event is None:
        return {}
    return {name: getattr(event, name) for name in _PROVENANCE}


def diff_states(
    previous: FileState | None, new: FileState, event: PatchEvent | None = None
) -> FileDelta:
    """What moves a file from ``previous`` (``None``: nothing stored) to ``new``."""
    return FileDelta(
        event_id=event.event_id if event else f"state:{new.content_hash}:{new.version}",
        tenant=new.tenant,
        repo=new.repo,
        ref=new.ref,
        workspace=new.workspace,
        path=new.path,
        op="upsert",
        version=new.version,
        base_version=previous.version if previous else None,
        language=new.language,
        content_hash=new.content_hash,
        size_bytes=new.size_bytes,
        flags=new.flags,
        symbols=new.symbols,
        edges=new.edges,
        chunks=new.chunks,
        commit_info=new.commit_info,
        discussion_info=new.discussion_info,
        history_head=new.history_head,
        **(_diff_lists(previous, new) if previous is not None else {}),
        **_provenance(event),
    )


def _diff_lists(
    previous: FileState, new: FileState
) -> dict[str, tuple[str, ...] | tuple[Edge, ...]]:
    """The diff lists against a base. Against nothing they stay empty: everything is new, and
    the complete lists say so (``FileDelta``)."""
    old_symbols = {s.id: s for s in previous.symbols}
    old_edges = set(previous.edges)
    old_chunks = {c.id: c for c in previous.chunks}
    old_hashes = {c.content_hash for c in old_chunks.values()}
    new_symbols = {s.id: s for s in new.symbols}
    new_edges = set(new.edges)
    new_chunks = {c.id: c for c in new.chunks}
    return {
        "symbol_ids_upsert": tuple(
            sid for sid, s in sorted(new_symbols.items()) if old_symbols.get(sid) != s
        ),
        "symbol_ids_remove": tuple(sorted(old_symbols.keys() - new_symbols.keys())),
        "edges_add": tuple(sorted(new_edges - old_edges, key=Edge.sort_key)),
        "edges_remove": tuple(sorted(old_edges - new_edges, key=Edge.sort_key)),
        "chunk_ids_upsert": tuple(
            cid for cid, c in sorted(new_chunks.items()) if old_chunks.get(cid) != c
        ),
        "chunk_ids_remove": tuple(sorted(old_chunks.keys() - new_chunks.keys())),
        "new_chunk_hashes": tuple(
            sorted({c.content_hash for c in new_chunks.values()} - old_hashes)
        ),
    }


def delete_delta(
    previous: FileState | None,
    *,
    tenant: str,
    repo: str,
    ref: str,
    path: str,
    version: int,
    workspace: str | None = None,
    event: PatchEvent | None = None,
) -> FileDelta:
    """Remove everything stored for a file."""
    return FileDelta(
        event_id=event.event_id if event else f"delete:{path}:{version}",
        tenant=tenant,
        repo=repo,
        ref=ref,
        workspace=workspace,
        path=path,
        op="delete",
        version=version,
        symbol_ids_remove=tuple(sorted(s.id for s in previous.symbols)) if previous else (),
        edges_remove=tuple(sorted(previous.edges, key=Edge.sort_key)) if previous else (),
        chunk_ids_remove=tuple(sorted(c.id for c in previous.chunks)) if previous else (),
        **_provenance(event),
    )


def applies_incrementally(stored_version: int | None, delta: FileDelta) -> bool:
    """Whether a sink holding ``stored_version`` of the file can use the delta's diff lists."""
    return stored_version == delta.base_version


def apply_delta(previous: FileState | None, delta: FileDelta) -> FileState | None:
    """The state a sink holds after applying ``delta`` to ``previous``; ``None`` after a delete.

    Uses the diff lists when ``previous`` is the delta's base, the complete lists otherwise.
    """
    if delta.op == "delete":
        return None
    if applies_incrementally(previous.version if previous else None, delta):
        symbols = {s.id: s for s in previous.symbols} if previous else {}
        edges = set(previous.edges) if previous else set()
        chunks = {c.id: c for c in previous.chunks} if previous else {}
        for sid in delta.symbol_ids_remove:
            symbols.pop(sid, None)
        symbols.update((s.id, s) for s in delta.upserted_symbols())
        edges.difference_update(delta.edges_remove)
        edges.update(delta.added_edges())
        for cid in delta.chunk_ids_remove:
            chunks.pop(cid, None)
        chunks.update((c.id, c) for c in delta.upserted_chunks())
    else:
        symbols = {s.id: s for s in delta.symbols}
        edges = set(delta.edges)
        chunks = {c.id: c for c in delta.chunks}
    return FileState(
        tenant=delta.tenant,
        repo=delta.repo,
        ref=delta.ref,
        workspace=delta.workspace,
        path=delta.path,
        version=delta.version,
        language=delta.language,
        content_hash=delta.content_hash or "",
        size_bytes=delta.size_bytes,
        flags=delta.flags,
        symbols=tuple(symbols[k] for k in sorted(symbols)),
        edges=tuple(sorted(edges, key=Edge.sort_key)),
        chunks=tuple(chunks[k] for k in sorted(chunks)),
    )


def compute_delta(
    previous: FileState | None,
    content: bytes,
    target: FileRef,
    builder: FileStateBuilder | None = None,
    event: PatchEvent | None = None,
) -> FileDelta:
    """Previous state + new content -> delta. Deterministic for the same inputs."""
    new = (builder or FileStateBuilder()).build(
        target, content, previous, event.edit if event else None
    )
    return diff_states(previous, new, event)
