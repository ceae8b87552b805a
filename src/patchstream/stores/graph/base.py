"""The graph store interface. Adapters differ only in how they run Cypher.

Contract (the shared contract suite in ``tests/integration`` holds every adapter to it):

- ``apply(delta)`` moves one file to the delta's state in one atomic write, or does nothing
  when ``delta.version`` is not newer than the file's applied version (deletes leave a
  fence behind, so a late upsert cannot resurrect a deleted file).
- References to symbols in other files become real edges as soon as both ends exist,
  whatever the arrival order; a removed target turns them back into references.
- Every read is scoped to one tenant; an empty tenant matches nothing.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from patchstream.schemas.graph import CallResolution
from patchstream.schemas.state import FileDelta, FileState
from patchstream.schemas.traces import TraceEvent
from patchstream.stores.graph.runtime_edges import TraceOutcome
from patchstream.stores.overlays import OverlayInfo, View


@dataclass(frozen=True)
class StoredSymbol:
    id: str
    kind: str
    name: str
    qualified_name: str
    repo: str
    ref: str
    path: str
    start_line: int
    end_line: int
    signature: str | None = None
    doc: str | None = None
    parent_id: str | None = None
    language: str | None = None
    content_hash: str | None = None


@dataclass(frozen=True)
class Neighbor:
    """A symbol reached from another one, at ``depth`` hops."""

    symbol: StoredSymbol
    depth: int
    # The weakest hop on the way (``CallResolution``): "exact" unless a guess was needed.
    resolution: str = "exact"


@dataclass(frozen=True)
class FileVersion:
    version: int
    applied_at: datetime
    deleted: bool


@dataclass(frozen=True)
class RepoVersion:
    files: int
    max_version: int
    last_applied_at: datetime | None


@dataclass(frozen=True)
class FlaggedFile:
    """A live file whose structure is partial or absent, and why (``FileFlags`` raised)."""

    repo: str
    ref: str
    path: str
    flags: tuple[str, ...]


@dataclass(frozen=True)
class SessionWrite:
    """A file an agent session wrote, and the symbols that write changed."""

    repo: str
    ref: str
    path: str
    version: int
    applied_at: datetime
    deleted: bool
    changed: tuple[str, ...]


@dataclass(frozen=True)
class ApplyResult:
    applied: bool
    reason: str = "applied"
    symbols_written: int = 0
    symbols_removed: int = 0
    edges_written: int = 0
    edges_removed: int = 0


@dataclass(frozen=True)
class CommitHit:
    sha: str
    parents: list[str]
    author: str
    date: str
    subject: str
    issues: list[str]
    files: list[dict[str, Any]] = field(default_factory=list)  # path, added, removed, symbols
    # Issues and PR/MRs it names or was merged by, and the issues those close.
    linked: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class GraphSnapshot:
    """Everything a tenant's graph holds, for comparing stores in tests."""

    symbols: set[tuple[str, ...]] = field(default_factory=set)
    edges: set[tuple[str, str, str]] = field(default_factory=set)
    # Call edges (materialized or references) and their resolution: (src, type, dst, value).
    resolutions: set[tuple[str, str, str, str]] = field(default_factory=set)
    fences: dict[str, tuple[int, bool]] = field(default_factory=dict)
    commits: set[tuple[str, str, str]] = field(default_factory=set)  # scope, sha, what it holds
    heads: dict[str, str] = field(default_factory=dict)  # scope -> the sha its history starts at


class GraphStore(abc.ABC):
    """Applies file deltas and answers the query side's structural questions."""

    @abc.abstractmethod
    def ensure_schema(self) -> None:
        """Create indexes and constraints; safe to call at every start."""

    @abc.abstractmethod
    def apply(self, delta: FileDelta) -> ApplyResult:
        """Apply one file delta atomically (see the module docstring)."""

    def apply_many(self, deltas: Sequence[FileDelta]) -> list[ApplyResult]:
        """Apply deltas in order; adapters batch the round trips."""
        return [self.apply(delta) for delta in deltas]

    @abc.abstractmethod
    def apply_traces(self, events: Sequence[TraceEvent]) -> list[TraceOutcome]:
        """Store the runtime edges of trace events whose files still hold the traced content."""

    @abc.abstractmethod
    def trace_marks(
        self, tenant: str, repo: str, ref: str, paths: Sequence[str]
    ) -> dict[str, TraceOutcome]:
        """The last trace event applied for each caller file of ``paths``."""

    @abc.abstractmethod
    def view(self, tenant: str, repo: str, ref: str) -> View | None:
        """The layers a read of ``ref`` sees when it is an overlay (``main~agent-42``, or a
        branch declared over a base); None for a plain branch."""

    @abc.abstractmethod
    def overlay_chain(self, tenant: str, repo: str, ref: str) -> list[str]:
        """``ref``, its base, the base's base... (one entry for a plain branch)."""

    @abc.abstractmethod
    def declare_overlay(self, tenant: str, repo: str, ref: str, base: str, kind: str) -> None:
        """Register ``ref`` as an overlay of ``base`` (a workspace's first write does it)."""

    @abc.abstractmethod
    def overlays(self, tenant: str, repo: str | None = None) -> list[OverlayInfo]:
        """Every registered overlay of the tenant (or one repository), with its size."""

    @abc.abstractmethod
    def forget_overlay(self, tenant: str, repo: str, ref: str) -> None:
        """Remove an overlay's registration (its rows go with ``delete_ref``)."""

    @abc.abstractmethod
    def repos(self, tenant: str) -> list[str]:
        """Every repository the tenant has files of, sorted."""

    @abc.abstractmethod
    def refs(self, tenant: str, repo: str) -> list[str]:
        """Every ref of a repository the store holds files of (overlays included), sorted."""

    def known_refs(self, tenant: str, repo: str) -> set[str]:
        """The refs a read or a new overlay may name: those holding files, and overlays
        declared but still empty."""
        return {*self.refs(tenant, repo), *(o.ref for o in self.overlays(tenant, repo))}

    @abc.abstractmethod
    def delete_ref(self, tenant: str, repo: str, ref: str) -> int:
        """Remove everything of one branch of a repository; returns symbols removed."""

    @abc.abstractmethod
    def fence_dropped_ref(self, tenant: str, repo: str, ref: str, version: int) -> None:
        """A dropped ref's tombstone: every delta of ``ref`` up to ``version`` is stale from
        now on, so no replay (the outbox, the topic, a redelivery) brings it back."""

    @abc.abstractmethod
    def dropped_refs(self, tenant: str) -> dict[str, int]:
        """Scope (``graph.keys.scope_of``) -> the version its ref was dropped at."""

    @abc.abstractmethod
    def symbol(self, tenant: str, symbol_id: str, ref: str = "main") -> StoredSymbol | None: ...

    @abc.abstractmethod
    def symbols_by_name(
        self, tenant: str, name: str, repo: str | None = None, ref: str | None = None
    ) -> list[StoredSymbol]:
        """Symbols whose name or qualified name equals ``name``."""

    def definers(
        self, tenant: str, names: Sequence[str], repo: str | None = None,
        ref: str | None = None, at_most: int | None = None,
    ) -> dict[str, set[str]]:  # fmt: skip
        """Name -> paths of the symbols whose name or qualified name it is (adapters answer
        all names in one round trip); none for a name defined in more than ``at_most``
        files."""
        found = {n: {s.path for s in self.symbols_by_name(tenant, n, repo, ref)} for n in names}
        return capped_definers(found, at_most)

    @abc.abstractmethod
    def callers(
        self, tenant: str, symbol_id: str, depth: int = 1, ref: str = "main",
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> list[Neighbor]:  # fmt: skip
        """Who calls or instantiates the symbol, up to ``depth`` (1 or 2) hops."""

    @abc.abstractmethod
    def callees(
        self, tenant: str, symbol_id: str, depth: int = 1, ref: str = "main",
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> list[Neighbor]:  # fmt: skip
        """What the symbol calls or instantiates, up to ``depth`` (1 or 2) hops."""

    @abc.abstractmethod
    def impact(
        self, tenant: str, symbol_id: str, depth: int = 3, ref: str = "main",
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> list[Neighbor]:  # fmt: skip
        """Every transitive caller (and overrider) up to ``depth``: what a change breaks."""

    def walks(
        self, tenant: str, kind: str, symbol_ids: Sequence[str], depth: int, ref: str = "main",
        limit: int | None = None, weakest: CallResolution = CallResolution.INFERRED,
    ) -> dict[str, list[Neighbor]]:  # fmt: skip
        """``callers``, ``callees`` or ``impact`` of each symbol (a store may read them
        together; the answer is each one's own walk), nearest first, at most ``limit`` each
        when given. Call edges weaker than ``weakest`` are not followed; each neighbor says
        the weakest resolution on its way."""
        walk = {"callers": self.callers, "callees": self.callees, "impact": self.impact}[kind]
        return {sid: walk(tenant, sid, depth, ref, weakest)[:limit] for sid in symbol_ids}

    @abc.abstractmethod
    def file_symbols(self, tenant: str, repo: str, ref: str, path: str) -> list[StoredSymbol]: ...

    @abc.abstractmethod
    def file_version(self, tenant: str, repo: str, ref: str, path: str) -> FileVersion | None: ...

    @abc.abstractmethod
    def history(
        self, tenant: str, repo: str, ref: str, path: str | None = None,
        symbol: str | None = None, limit: int = 20,
    ) -> list[CommitHit]:  # fmt: skip
        """Commits reachable from the view's head that changed ``path`` (in a definition
        named ``symbol``), or every reachable commit; newest first."""

    @abc.abstractmethod
    def histories(
        self,
        tenant: str,
        repo: str,
        ref: str,
        paths: list[str],
        symbol: str | None = None,
        limit: int = 20,
    ) -> dict[str, list[CommitHit]]:
        """``history`` of each of ``paths`` (those no reachable commit changed are left out)."""

    @abc.abstractmethod
    def path_discussions(
        self, tenant: str, repo: str, ref: str, paths: list[str], limit: int = 20
    ) -> dict[str, list[dict[str, Any]]]:
        """Review comments on each of ``paths`` in the view, newest first."""

    @abc.abstractmethod
    def thread_notes(self, tenant: str, repo: str, ref: str, thread: str) -> list[str]:
        """The paths of the notes (comments, reviews) on ``thread`` (``issue-12``) that
        ``ref``'s own layer holds."""

    @abc.abstractmethod
    def session_files(
        self, tenant: str, session_id: str, repo: str | None = None, limit: int = 5
    ) -> list[SessionWrite]:
        """The files a session wrote most recently, newest first."""

    @abc.abstractmethod
    def file_content_hash(self, tenant: str, repo: str, ref: str, path: str) -> str | None:
        """The content hash of the file's applied version; None if absent or deleted."""

    @abc.abstractmethod
    def changed_since(
        self,
        tenant: str,
        repo: str,
        ref: str,
        workspace: str | None,
        since: float,
        limit: int = 200,
    ) -> list[SessionWrite]:
        """Files of one scope applied after ``since`` (epoch seconds), newest first, with the
        symbols each write changed (what a resumed run must re-read)."""

    @abc.abstractmethod
    def file_sources(
        self, tenant: str, scope_paths: list[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], str]:
        """(repo, ref, path) -> source of the file's last write."""

    @abc.abstractmethod
    def file_state(
        self, tenant: str, repo: str, ref: str, path: str, workspace: str | None = None
    ) -> FileState | None:
        """The file's stored symbols and edges as a state (chunks are the vector tier's)."""

    @abc.abstractmethod
    def repo_version(self, tenant: str, repo: str, ref: str) -> RepoVersion: ...

    @abc.abstractmethod
    def file_flags(self, tenant: str, repo: str, ref: str, path: str) -> list[str]:
        """The flags raised on the file a read of ``ref`` sees at ``path`` (none: [])."""

    @abc.abstractmethod
    def flagged_files(
        self, tenant: str, repo: str | None = None, ref: str = "main", limit: int = 10_000
    ) -> list[FlaggedFile]:
        """Live files with a flag raised (too large, binary, secret, not UTF-8, over the
        parse budget, failed, syntax errors): those a read of ``repo``'s ``ref`` sees, or
        the tenant's (every repository and ref) when ``repo`` is None."""

    @abc.abstractmethod
    def live_files(self, tenant: str, file_uids: list[str]) -> set[str]:
        """Which of ``file_uids`` (``<scope>|<path>``) the store holds, not deleted."""

    @abc.abstractmethod
    def count_applied(self, tenant: str, repo: str, ref: str, min_version: int) -> int:
        """Files of a branch whose applied version (upsert or delete) is >= ``min_version``."""

    @abc.abstractmethod
    def file_hashes(self, tenant: str, repo: str, ref: str) -> dict[str, str]:
        """Path -> content hash of every live file of a branch (for reconcile scans)."""

    @abc.abstractmethod
    def file_versions(self, tenant: str, repo: str, ref: str) -> dict[str, int]:
        """Path -> applied version of every file of a branch, deleted ones included."""

    @abc.abstractmethod
    def snapshot(self, tenant: str) -> GraphSnapshot:
        """Every symbol and edge of a tenant (tests and consistency checks)."""

    @abc.abstractmethod
    def close(self) -> None: ...


def capped_definers(found: dict[str, set[str]], at_most: int | None) -> dict[str, set[str]]:
    """``found`` (name -> paths) with no paths for a name defined in more than ``at_most``."""
    if at_most is None:
        return found
    return {name: set() if len(paths) > at_most else paths for name, paths in found.items()}
