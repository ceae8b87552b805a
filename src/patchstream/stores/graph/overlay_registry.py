"""Which refs are overlays, and of what: a mixin of ``CypherGraphStore``.

A workspace ``main~agent-42`` is an overlay of ``main`` by its name; a branch is one when an
``Overlay`` node says so (a write with ``base_ref``, ``index --base`` or ``POST
/v1/overlays`` creates it). ``view`` turns a ref into the layers a read sees.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Sequence
from typing import Any

from patchstream.stores.graph.discussion_horizon import DiscussionHorizon
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.graph.statements import UPSERT_OVERLAY
from patchstream.stores.overlays import MAX_LAYERS, Layer, OverlayInfo, View, split_workspace

_OVERLAY_CACHE_S = 5.0  # how long "is this branch an overlay, and of what" is remembered


class OverlayRegistry(DiscussionHorizon, abc.ABC):
    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]: ...

    # -- which layers -----------------------------------------------------------------------

    def overlay_base(self, tenant: str, repo: str, ref: str) -> str | None:
        """The ref ``ref`` is an overlay of: the part before ``~`` for a workspace, else the
        base a branch overlay was declared with (None for a plain branch)."""
        base, workspace = split_workspace(ref)
        if workspace is not None:
            return base
        cache: dict[tuple[str, str, str], tuple[float, str | None]]
        cache = self.__dict__.setdefault("_overlay_bases", {})
        now = time.monotonic()
        hit = cache.get((tenant, repo, ref))
        # A branch becomes an overlay with its first write: "not one" is re-read soon.
        if hit is not None and now - hit[0] < (_OVERLAY_CACHE_S if hit[1] else 1.0):
            return hit[1]
        rows = self._read(
            tenant,
            "MATCH (o:Overlay {uid: $uid}) RETURN o.base",
            {"uid": scope_of(tenant, repo, ref)},
        )
        found = str(rows[0][0]) if rows and rows[0][0] else None
        if len(cache) > 4096:
            cache.clear()
        cache[(tenant, repo, ref)] = (now, found)
        return found

    def overlay_chain(self, tenant: str, repo: str, ref: str) -> list[str]:
        """``ref``, its base, the base's base... (one entry for a plain branch)."""
        chain = [ref]
        while len(chain) < MAX_LAYERS:
            base = self.overlay_base(tenant, repo, chain[-1])
            if base is None or base in chain:
                break
            chain.append(base)
        return chain

    def view(self, tenant: str, repo: str, ref: str) -> View | None:
        """The layers a read of ``ref`` sees, or None when ``ref`` is a plain branch."""
        return self.view_with(tenant, repo, ref)[0]

    def view_with(
        self, tenant: str, repo: str, ref: str, symbol_ids: Sequence[str] = ()
    ) -> tuple[View | None, list[dict[str, Any]]]:
        """The view and, in the same round trip, the rows of ``symbol_ids`` in its layers
        (walks' starts: one query fewer per walk)."""
        if not tenant:
            return None, []
        chain = self.overlay_chain(tenant, repo, ref)
        if len(chain) == 1:
            return None, []
        scopes = [scope_of(tenant, repo, name) for name in chain]
        rows = self._read(
            tenant,
            "UNWIND $upper AS scope MATCH (f:Fence {scope: scope}) "
            "RETURN 'held' AS how, f.scope AS scope, f.path AS path, null AS props "
            "UNION ALL UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) "
            "RETURN 'start' AS how, s.scope AS scope, s.path AS path, properties(s) AS props "
            "UNION ALL UNWIND $scopes AS scope MATCH (h:HistoryHead {uid: scope}) "
            "RETURN 'head' AS how, h.uid AS scope, h.sha AS path, null AS props",
            {"upper": scopes[:-1], "scopes": scopes,
             "uids": [f"{scope}|{sid}" for sid in symbol_ids for scope in scopes]},
        )  # fmt: skip
        held: dict[str, set[str]] = {scope: set() for scope in scopes}
        heads: dict[str, str] = {}
        starts = []
        for how, scope, path, props in rows:
            if how == "held":
                held[scope].add(str(path))
            elif how == "head":
                heads[str(scope)] = str(path)
            else:
                starts.append(props)
        # Discussions opened after an older overlay's head are its future: hidden by the top
        # layer, as a file it deleted would be (see ``discussion_horizon``).
        cutoff = self.discussion_cutoff(tenant, scopes, heads)
        if cutoff is not None:
            held[scopes[0]] |= self.later_discussions(tenant, scopes, cutoff)
        layers = [Layer(scope, frozenset(held[scope])) for scope in scopes[:-1]]
        layers.append(Layer(scopes[-1], frozenset()))
        return View(tenant, repo, ref, tuple(layers)), starts

    # -- the registry ---------------------------------------------------------------------

    @abc.abstractmethod
    def _write(self, tenant: str, statements: Sequence[tuple[str, dict[str, Any]]]) -> None: ...

    def declare_overlay(self, tenant: str, repo: str, ref: str, base: str, kind: str) -> None:
        """Register ``ref`` as an overlay of ``base`` (a workspace's first write does this
        itself). Re-declaring moves nothing but the base."""
        if split_workspace(base)[1] is not None and kind == "branch":
            raise ValueError("a branch overlay's base is a branch, not a workspace")
        props = {"tenant": tenant, "repo": repo, "ref": ref, "base": base, "kind": kind}
        params = {"uid": scope_of(tenant, repo, ref), "now": time.time(), "props": props}
        self._write(tenant, [(UPSERT_OVERLAY, params)])
        self.__dict__.get("_overlay_bases", {}).pop((tenant, repo, ref), None)

    def overlays(self, tenant: str, repo: str | None = None) -> list[OverlayInfo]:
        """Every overlay of the tenant (or of one repository), with its size."""
        if not tenant:
            return []
        rows = self._read(
            tenant,
            "MATCH (o:Overlay) WHERE o.tenant = $tenant AND ($repo IS NULL OR o.repo = $repo) "
            "OPTIONAL MATCH (f:Fence {scope: o.uid}) "
            "RETURN o.uid, o.repo, o.ref, o.base, o.kind, o.created_at, o.last_write_at, "
            "o.closed_at, "
            "sum(CASE WHEN f.deleted = false THEN 1 ELSE 0 END), "
            "sum(CASE WHEN f.deleted = true THEN 1 ELSE 0 END) ORDER BY o.repo, o.ref",
            {"tenant": tenant, "repo": repo},
        )
        found = []
        for uid, repo_name, ref, base, kind, created, last, closed, files, deleted in rows:
            symbols = self._read(
                tenant,
                "MATCH (f:Fence {scope: $scope}) MATCH (s:Symbol {file_uid: f.uid}) "
                "RETURN count(s)",
                {"scope": uid},
            )
            found.append(OverlayInfo(
                repo_name, ref, base, kind, float(created or 0.0),
                None if last is None else float(last), int(files), int(deleted),
                int(symbols[0][0]) if symbols else 0, None if closed is None else float(closed),
            ))  # fmt: skip
        return found

    def fence_dropped_ref(self, tenant: str, repo: str, ref: str, version: int) -> None:
        self._write(tenant, [(
            "MERGE (d:DroppedRef {uid: $uid}) SET d.tenant = $tenant, d.version = CASE WHEN "
            "d.version IS NULL OR d.version < $version THEN $version ELSE d.version END",
            {"uid": scope_of(tenant, repo, ref), "tenant": tenant, "version": version},
        )])  # fmt: skip

    def dropped_refs(self, tenant: str) -> dict[str, int]:
        rows = self._read(tenant, "MATCH (d:DroppedRef) WHERE d.tenant = $tenant "
                          "RETURN d.uid, d.version", {"tenant": tenant})  # fmt: skip
        return {str(row[0]): int(row[1]) for row in rows}

    def forget_overlay(self, tenant: str, repo: str, ref: str) -> None:
        """Remove the registration (the caller drops the overlay's rows with ``delete_ref``)."""
        self._write(
            tenant,
            [("MATCH (o:Overlay {uid: $uid}) DELETE o", {"uid": scope_of(tenant, repo, ref)})],
        )
        self.__dict__.get("_overlay_bases", {}).pop((tenant, repo, ref), None)
