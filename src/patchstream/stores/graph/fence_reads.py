"""Reads of the per-file fences every backend shares: versions, hashes, sources, what a
session or a run's scope changed, repository freshness. A mixin of ``CypherGraphStore``."""

from __future__ import annotations

import abc
from datetime import UTC, datetime
from typing import Any

from patchstream.stores.graph.base import FileVersion, FlaggedFile, RepoVersion, SessionWrite
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.graph.statements import READ_FENCE
from patchstream.stores.overlays import View


class FenceReads(abc.ABC):
    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        """Run a read-only query in the tenant's graph; a missing graph reads as empty."""

    @abc.abstractmethod
    def view(self, tenant: str, repo: str, ref: str) -> View | None:
        """The layers a read of an overlay sees; None for a plain branch."""

    def _file_uid(self, tenant: str, repo: str, ref: str, path: str) -> str:
        """The fence of ``path`` a read of ``ref`` sees (an overlay's, or its base's)."""
        view = self.view(tenant, repo, ref)
        scope = view.owner(path) if view is not None else scope_of(tenant, repo, ref)
        return f"{scope}|{path}"

    def file_version(self, tenant: str, repo: str, ref: str, path: str) -> FileVersion | None:
        if not tenant:
            return None
        rows = self._read(tenant, READ_FENCE, {"fuid": self._file_uid(tenant, repo, ref, path)})
        if not rows:
            return None
        version, deleted, applied_at, _module = rows[0]
        return FileVersion(int(version), from_epoch(applied_at), bool(deleted))

    def session_files(
        self, tenant: str, session_id: str, repo: str | None = None, limit: int = 5
    ) -> list[SessionWrite]:
        """The files a session wrote most recently, newest first, with the symbols it changed."""
        if not tenant or not session_id:
            return []
        rows = self._read(
            tenant,
            "MATCH (f:Fence) WHERE f.tenant = $tenant AND f.session_id = $session "
            "AND ($repo IS NULL OR f.repo = $repo) "
            "RETURN f.repo, f.ref, f.path, f.version, f.applied_at, f.deleted, f.changed "
            "ORDER BY f.applied_at DESC LIMIT $limit",
            {"tenant": tenant, "session": session_id, "repo": repo, "limit": int(limit)},
        )
        return _writes(rows)

    def file_content_hash(self, tenant: str, repo: str, ref: str, path: str) -> str | None:
        if not tenant:
            return None
        rows = self._read(
            tenant,
            "MATCH (f:Fence {uid: $fuid}) RETURN f.content_hash, f.deleted",
            {"fuid": self._file_uid(tenant, repo, ref, path)},
        )
        return None if not rows or rows[0][1] else rows[0][0]

    def changed_since(
        self,
        tenant: str,
        repo: str,
        ref: str,
        workspace: str | None,
        since: float,
        limit: int = 200,
    ) -> list[SessionWrite]:
        if not tenant:
            return []
        rows = self._read(
            tenant,
            "MATCH (f:Fence) WHERE f.scope = $scope AND f.applied_at > $since "
            "RETURN f.repo, f.ref, f.path, f.version, f.applied_at, f.deleted, f.changed "
            "ORDER BY f.applied_at DESC LIMIT $limit",
            {"scope": scope_of(tenant, repo, ref, workspace), "since": float(since),
             "limit": int(limit)},
        )  # fmt: skip
        return _writes(rows)

    def file_sources(
        self, tenant: str, scope_paths: list[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], str]:
        """(repo, ref, path) -> the source of the file's last write (github, agent, ...)."""
        if not tenant or not scope_paths:
            return {}
        uids = [f"{scope_of(tenant, repo, ref)}|{path}" for repo, ref, path in scope_paths]
        rows = self._read(
            tenant,
            "UNWIND $uids AS uid MATCH (f:Fence {uid: uid}) RETURN f.repo, f.ref, f.path, f.source",
            {"uids": uids},
        )
        return {(r[0], r[1], r[2]): r[3] or "snapshot" for r in rows}

    def repos(self, tenant: str) -> list[str]:
        if not tenant:
            return []
        rows = self._read(tenant, "MATCH (f:Fence) RETURN DISTINCT f.repo", {})
        return sorted(str(row[0]) for row in rows if row[0])

    def refs(self, tenant: str, repo: str) -> list[str]:
        if not tenant:
            return []
        rows = self._read(tenant, "MATCH (f:Fence) WHERE f.repo = $repo RETURN DISTINCT f.ref",
                          {"repo": repo})  # fmt: skip
        return sorted(str(row[0]) for row in rows if row[0])

    def live_files(self, tenant: str, file_uids: list[str]) -> set[str]:
        if not tenant or not file_uids:
            return set()
        rows = self._read(
            tenant,
            "UNWIND $uids AS uid MATCH (f:Fence {uid: uid}) WHERE f.deleted = false RETURN f.uid",
            {"uids": file_uids},
        )
        return {row[0] for row in rows}

    def repo_version(self, tenant: str, repo: str, ref: str) -> RepoVersion:
        if not tenant:
            return RepoVersion(0, 0, None)
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) WHERE f.deleted = false "
            "RETURN count(f), max(f.version), max(f.applied_at)",
            {"scope": scope_of(tenant, repo, ref)},
        )
        if not rows or not rows[0][0]:
            return RepoVersion(0, 0, None)
        files, version, applied = rows[0]
        return RepoVersion(int(files), int(version), from_epoch(applied))

    def file_flags(self, tenant: str, repo: str, ref: str, path: str) -> list[str]:
        if not tenant:
            return []
        fuid = self._file_uid(tenant, repo, ref, path)
        rows = self._read(tenant, "MATCH (f:Fence {uid: $fuid}) WHERE f.deleted = false "
                          "RETURN f.flags", {"fuid": fuid})  # fmt: skip
        return sorted(rows[0][0] or []) if rows else []

    def flagged_files(
        self, tenant: str, repo: str | None = None, ref: str = "main", limit: int = 10_000
    ) -> list[FlaggedFile]:
        if not tenant:
            return []
        flagged = "f.deleted = false AND size(f.flags) > 0"
        if repo is None:
            rows = self._read(tenant, f"MATCH (f:Fence) WHERE {flagged} RETURN f.scope, f.path, "
                              "f.flags ORDER BY f.scope, f.path LIMIT $limit",
                              {"limit": limit})  # fmt: skip
        else:
            view = self.view(tenant, repo, ref)
            scopes = view.scopes if view is not None else [scope_of(tenant, repo, ref)]
            rows = self._read(tenant, f"MATCH (f:Fence) WHERE f.scope IN $scopes AND {flagged} "
                              "RETURN f.scope, f.path, f.flags ORDER BY f.path LIMIT $limit",
                              {"scopes": scopes, "limit": limit})  # fmt: skip
            if view is not None:  # what a layer above holds hides the base's copy
                rows = [r for r in rows if view.owner(r[1]) == r[0]]
        found = []
        for scope, path, flags in rows:
            _tenant, repo_of, ref_of = str(scope).split("|", 2)
            found.append(FlaggedFile(repo_of, ref_of, path, tuple(sorted(flags))))
        return found

    def count_applied(self, tenant: str, repo: str, ref: str, min_version: int) -> int:
        if not tenant:
            return 0
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) WHERE f.version >= $v RETURN count(f)",
            {"scope": scope_of(tenant, repo, ref), "v": min_version},
        )
        return int(rows[0][0]) if rows else 0

    def scope_counts(self, tenant: str, repo: str, ref: str) -> tuple[int, int, int]:
        """(symbols, edges between symbols, references out of files) of one branch."""
        if not tenant:
            return (0, 0, 0)
        params = {"scope": scope_of(tenant, repo, ref)}
        counts = []
        for query in (
            "MATCH (s:Symbol {scope: $scope}) RETURN count(s)",
            "MATCH (s:Symbol {scope: $scope})-[r]->(:Symbol) RETURN count(r)",
        ):
            rows = self._read(tenant, query, params)
            counts.append(int(rows[0][0]) if rows else 0)
        # Each file's fence says how many references it has (``planner``); a fence written
        # before it did leaves the count to the graph's edges (one per candidate key).
        fenced = (
            "MATCH (f:Fence {scope: $scope}) WHERE f.deleted = false "
            "RETURN sum(f.references), count(f), count(f.references)"
        )
        rows = self._read(tenant, fenced, params)
        summed, fences, counted = rows[0] if rows else (0, 0, 0)
        if fences == counted:
            return (counts[0], counts[1], int(summed or 0))
        edges = (
            "MATCH (s:Symbol {scope: $scope})-[r:REFERS]->(:Want) "
            "RETURN count(DISTINCT s.uid + '|' + r.type + '|' + r.dst)"
        )
        rows = self._read(tenant, edges, params)
        return (counts[0], counts[1], int(rows[0][0]) if rows else 0)

    def file_hashes(self, tenant: str, repo: str, ref: str) -> dict[str, str]:
        if not tenant:
            return {}
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) WHERE f.deleted = false RETURN f.path, f.content_hash",
            {"scope": scope_of(tenant, repo, ref)},
        )
        return {path: content_hash or "" for path, content_hash in rows}

    def file_versions(self, tenant: str, repo: str, ref: str) -> dict[str, int]:
        if not tenant:
            return {}
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) RETURN f.path, f.version",
            {"scope": scope_of(tenant, repo, ref)},
        )
        return {path: int(version) for path, version in rows}


def _writes(rows: list[list[Any]]) -> list[SessionWrite]:
    return [
        SessionWrite(
            repo=r[0],
            ref=r[1],
            path=r[2],
            version=int(r[3]),
            applied_at=from_epoch(r[4]),
            deleted=bool(r[5]),
            changed=tuple(r[6] or ()),
        )
        for r in rows
    ]


def from_epoch(value: Any) -> datetime:
    return datetime.fromtimestamp(float(value), tz=UTC)
