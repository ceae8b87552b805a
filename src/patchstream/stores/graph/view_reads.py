"""Reads of an overlay view (see ``stores.overlays``): a mixin of ``CypherGraphStore``.

A plain ref reads its materialized edges. An overlay cannot: an edge from a base file into a
function the overlay renamed is still materialized in the base, and a base caller of a
function the overlay added was never materialized anywhere. So a view resolves cross-file
references at read time from what every layer keeps anyway: each reference's ``REFERS``
edges to its candidate keys (``Want``) and each symbol's ``rkey``. A key of one layer names
the same module and symbol in every layer; a match counts when its row is visible (no upper
layer holds its path). Edges inside a file (``via`` unset) are read as stored: a file is
visible whole or not at all.

The walks mirror the plain ones rule for rule (the property test compares them with a clean
index of the merged files): callers, callees, impact with cross-file overrides, and the
callers' walks through subclasses, interfaces and Go's structural interfaces.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Iterable, Sequence
from typing import Any

from patchstream.stores.graph.base import Neighbor, StoredSymbol
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.graph.statements import UPSERT_OVERLAY
from patchstream.stores.overlays import MAX_LAYERS, Layer, OverlayInfo, View, split_workspace

Props = dict[str, Any]
_CALLS = ("CALLS", "INSTANTIATES")
_OVERLAY_CACHE_S = 5.0  # how long "is this branch an overlay, and of what" is remembered


def symbol_from_props(props: Props) -> StoredSymbol:
    return StoredSymbol(
        id=props["id"],
        kind=props["kind"],
        name=props["name"],
        qualified_name=props["qualified_name"],
        repo=props["repo"],
        ref=props["ref"]
        if props.get("workspace") is None
        else f"{props['ref']}~{props['workspace']}",
        path=props["path"],
        start_line=int(props["start_line"]),
        end_line=int(props["end_line"]),
        signature=props.get("signature"),
        doc=props.get("doc"),
        parent_id=props.get("parent_id"),
        language=props.get("language"),
        content_hash=props.get("content_hash"),
    )


class ViewReads(abc.ABC):
    max_walk_rows: int

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
        if not tenant:
            return None
        chain = self.overlay_chain(tenant, repo, ref)
        if len(chain) == 1:
            return None
        layers = [Layer(scope_of(tenant, repo, name), self._held_paths(tenant, repo, name))
                  for name in chain[:-1]]  # fmt: skip
        layers.append(Layer(scope_of(tenant, repo, chain[-1]), frozenset()))
        return View(tenant, repo, ref, tuple(layers))

    def _held_paths(self, tenant: str, repo: str, ref: str) -> frozenset[str]:
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) RETURN f.path",
            {"scope": scope_of(tenant, repo, ref)},
        )
        return frozenset(str(r[0]) for r in rows)

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

    def forget_overlay(self, tenant: str, repo: str, ref: str) -> None:
        """Remove the registration (the caller drops the overlay's rows with ``delete_ref``)."""
        self._write(
            tenant,
            [("MATCH (o:Overlay {uid: $uid}) DELETE o", {"uid": scope_of(tenant, repo, ref)})],
        )
        self.__dict__.get("_overlay_bases", {}).pop((tenant, repo, ref), None)

    # -- symbols --------------------------------------------------------------------------

    def _visible(self, view: View, rows: Iterable[list[Any]]) -> list[tuple[str, Props]]:
        out: dict[str, Props] = {}
        for row in rows:
            uid, props = row[0], row[1]
            if view.visible(props["scope"], props["path"]):
                out.setdefault(uid, props)
        return list(out.items())

    def view_symbol(self, view: View, symbol_id: str) -> StoredSymbol | None:
        rows = self._read(
            view.tenant,
            "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) RETURN s.uid, properties(s)",
            {"uids": [f"{scope}|{symbol_id}" for scope in view.scopes]},
        )
        found = self._visible(view, rows)
        return symbol_from_props(found[0][1]) if found else None

    def view_symbols_by_name(self, view: View, name: str) -> list[StoredSymbol]:
        rows = self._read(
            view.tenant,
            "MATCH (s:Symbol) WHERE s.tenant = $tenant AND s.scope IN $scopes "
            "AND (s.name = $name OR s.qualified_name = $name) RETURN s.uid, properties(s)",
            {"tenant": view.tenant, "scopes": view.scopes, "name": name},
        )
        found = [symbol_from_props(p) for _, p in self._visible(view, rows)]
        return sorted(found, key=lambda s: s.id)

    def view_file_symbols(self, view: View, path: str) -> list[StoredSymbol]:
        rows = self._read(
            view.tenant,
            "MATCH (s:Symbol {file_uid: $fuid}) RETURN properties(s) ORDER BY s.id",
            {"fuid": f"{view.owner(path)}|{path}"},
        )
        return [symbol_from_props(r[0]) for r in rows]

    # -- one hop --------------------------------------------------------------------------

    def _local(self, view: View, uids: list[str], types: str, inbound: bool) -> list[list[Any]]:
        step = f"(t)<-[r:{types}]-(n:Symbol)" if inbound else f"(t)-[r:{types}]->(n:Symbol)"
        return self._read(
            view.tenant,
            f"UNWIND $uids AS uid MATCH (t:Symbol {{uid: uid}}) MATCH {step} "
            "WHERE r.via IS NULL RETURN DISTINCT n.uid, properties(n)",
            {"uids": uids},
        )

    def _referrers(
        self, view: View, targets: list[Props], types: tuple[str, ...]
    ) -> list[list[Any]]:
        """Symbols (any layer) whose references of ``types`` want one of the targets' keys."""
        keys: dict[str, set[str]] = {}
        for target in targets:
            if target.get("rkey"):
                for key in view.keys(target["rkey"]):
                    keys.setdefault(key, set()).add(target["uid"])
        if not keys:
            return []
        rows = self._read(
            view.tenant,
            "UNWIND $keys AS key MATCH (w:Want {uid: key})<-[r:REFERS]-(n:Symbol) "
            "WHERE r.type IN $types RETURN DISTINCT n.uid, properties(n), key",
            {"keys": sorted(keys), "types": list(types)},
        )
        return [row for row in rows if row[0] not in keys[row[2]]]

    def _referred(self, view: View, sources: list[str], types: tuple[str, ...]) -> list[list[Any]]:
        """What the sources' references of ``types`` find in the view."""
        wants = self._read(
            view.tenant,
            "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid})-[r:REFERS]->(w:Want) "
            "WHERE r.type IN $types RETURN DISTINCT s.uid, w.uid",
            {"uids": sources, "types": list(types)},
        )
        by_key: dict[str, set[str]] = {}
        for src, key in wants:
            for candidate in view.keys(key):
                by_key.setdefault(candidate, set()).add(src)
        if not by_key:
            return []
        rows = self._read(
            view.tenant,
            "UNWIND $keys AS key MATCH (t:Symbol {rkey: key}) RETURN t.uid, properties(t), key",
            {"keys": sorted(by_key)},
        )
        return [row for row in rows if by_key[row[2]] - {row[0]}]

    def _hop(
        self, view: View, frontier: list[Props], types: tuple[str, ...], inbound: bool
    ) -> list[tuple[str, Props]]:
        uids = [p["uid"] for p in frontier]
        rows = self._local(view, uids, "|".join(types), inbound)
        cross = tuple(t for t in types if t != "OVERRIDES")
        rows += (
            self._referrers(view, frontier, cross) if inbound else self._referred(view, uids, cross)
        )
        if inbound and "OVERRIDES" in types:
            rows += self._overriders(view, frontier)
        return self._visible(view, rows)

    # -- inheritance ----------------------------------------------------------------------

    def _parents(self, view: View, members: list[Props]) -> dict[str, Props]:
        """member uid -> the symbol that defines it (same file: always visible with it)."""
        rows = self._read(
            view.tenant,
            "UNWIND $uids AS uid MATCH (t:Symbol {uid: uid})<-[:DEFINES]-(p:Symbol) "
            "RETURN t.uid, properties(p)",
            {"uids": [m["uid"] for m in members]},
        )
        return {r[0]: r[1] for r in rows}

    def _children(self, view: View, parents: list[Props]) -> dict[str, list[Props]]:
        rows = self._read(
            view.tenant,
            "UNWIND $uids AS uid MATCH (p:Symbol {uid: uid})-[:DEFINES]->(c:Symbol) "
            "RETURN p.uid, properties(c)",
            {"uids": [p["uid"] for p in parents]},
        )
        out: dict[str, list[Props]] = {}
        for parent, child in rows:
            out.setdefault(parent, []).append(child)
        return out

    def _inheritors(
        self, view: View, classes: list[Props], cross_only: bool = False
    ) -> list[tuple[str, Props]]:
        """Classes inheriting from any of ``classes`` (one level)."""
        rows = (
            []
            if cross_only
            else self._local(view, [c["uid"] for c in classes], "INHERITS_FROM", True)
        )
        rows += self._referrers(view, classes, ("INHERITS_FROM",))
        return self._visible(view, rows)

    def _ancestors(self, view: View, classes: list[Props], levels: int) -> list[Props]:
        found: dict[str, Props] = {}
        frontier = classes
        for _ in range(levels):
            if not frontier:
                break
            uids = [c["uid"] for c in frontier]
            rows = self._local(view, uids, "INHERITS_FROM", False)
            rows += self._referred(view, uids, ("INHERITS_FROM",))
            frontier = [p for uid, p in self._visible(view, rows) if uid not in found]
            found.update((p["uid"], p) for p in frontier)
        return list(found.values())

    def _overriders(self, view: View, methods: list[Props]) -> list[list[Any]]:
        """Cross-file overrides: a method of a class (another file) that inherits directly
        from the method's class and has its name."""
        parents = self._parents(view, [m for m in methods if m.get("kind") == "function"])
        rows: list[list[Any]] = []
        for method in methods:
            owner = parents.get(method["uid"])
            if owner is None:
                continue
            heirs = [p for _, p in self._inheritors(view, [owner], cross_only=True)
                     if p["file_uid"] != owner["file_uid"]]  # fmt: skip
            for children in self._children(view, heirs).values():
                rows += [[c["uid"], c] for c in children
                         if c["name"] == method["name"] and c["kind"] == "function"]  # fmt: skip
        return rows

    def _inherited_callers(self, view: View, frontier: list[Props]) -> list[tuple[str, Props]]:
        """The view's versions of the plain walks through subclasses, interfaces and Go's
        structural interfaces (``statements.CALLERS_THROUGH_*``)."""
        parents = self._parents(view, frontier)
        rows: list[list[Any]] = []
        for target in frontier:
            owner = parents.get(target["uid"])
            if owner is None:
                continue
            rows += self._through_subclasses(view, target, owner)
            ancestors = self._ancestors(view, [owner], 3)
            interfaces = [a for a in ancestors if a.get("kind") == "interface"]
            methods = [c for kids in self._children(view, interfaces).values() for c in kids
                       if c["name"] == target["name"]]  # fmt: skip
            if target.get("language") == "go":
                methods += self._go_interface_methods(view, target, owner)
            if methods:
                rows += self._local(view, [m["uid"] for m in methods], "CALLS", True)
                rows += self._referrers(view, methods, ("CALLS",))
        return self._visible(view, rows)

    def _through_subclasses(self, view: View, target: Props, owner: Props) -> list[list[Any]]:
        subclasses: dict[str, Props] = {}
        frontier = [owner]
        for _ in range(3):
            frontier = [p for uid, p in self._inheritors(view, frontier) if uid not in subclasses]
            subclasses.update((p["uid"], p) for p in frontier)
        own = self._children(view, list(subclasses.values()))
        wanting = [
            {**sub, "rkey": f"{sub['rkey']}.{target['name']}"}
            for uid, sub in subclasses.items()
            if sub.get("rkey") and not any(c["name"] == target["name"] for c in own.get(uid, []))
        ]
        return self._referrers(view, wanting, _CALLS)

    def _go_interface_methods(self, view: View, target: Props, owner: Props) -> list[Props]:
        rows = self._read(
            view.tenant,
            "MATCH (m:Symbol {name: $name}) WHERE m.scope IN $scopes AND m.language = 'go' "
            "MATCH (i:Symbol {kind: 'interface'})-[:DEFINES]->(m) "
            "MATCH (i)-[:DEFINES]->(wanted:Symbol) "
            "RETURN m.uid, properties(m), collect(DISTINCT wanted.name)",
            {"name": target["name"], "scopes": view.scopes},
        )
        has = {c["name"] for kids in self._children(view, [owner]).values() for c in kids}
        return [p for uid, p in self._visible(view, [[r[0], r[1]] for r in rows
                if set(r[2]) <= has])]  # fmt: skip

    # -- walks ----------------------------------------------------------------------------

    def view_walk(
        self, view: View, symbol_id: str, depth: int, types: tuple[str, ...], inbound: bool,
        inherited: bool = False,
    ) -> list[Neighbor]:  # fmt: skip
        """Breadth first like ``CypherGraphStore._walk``, over the view."""
        start = self._read(
            view.tenant,
            "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) RETURN s.uid, properties(s)",
            {"uids": [f"{scope}|{symbol_id}" for scope in view.scopes]},
        )
        frontier = [p for _, p in self._visible(view, start)][:1]
        seen = {p["uid"] for p in frontier}
        found: list[Neighbor] = []
        for level in range(1, depth + 1):
            if not frontier or len(found) >= self.max_walk_rows:
                break
            rows = self._hop(view, frontier, types, inbound)
            if inherited:
                rows += self._inherited_callers(view, frontier)
            frontier = []
            for uid, props in rows:
                if uid in seen or len(found) >= self.max_walk_rows:
                    continue
                seen.add(uid)
                frontier.append(props)
                found.append(Neighbor(symbol_from_props(props), level))
        return sorted(found, key=lambda n: (n.depth, n.symbol.id))
