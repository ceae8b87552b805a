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
from collections.abc import Iterable
from typing import Any

from patchstream.schemas.events import view_ref
from patchstream.schemas.graph import CallResolution
from patchstream.stores.graph.base import Neighbor, StoredSymbol
from patchstream.stores.graph.overlay_registry import OverlayRegistry
from patchstream.stores.graph.view_inheritance import ViewInheritance
from patchstream.stores.graph.view_types import Pair, Props
from patchstream.stores.graph.walks import Walks
from patchstream.stores.overlays import View

# Cross-file overrides of the ``$methods``, in the view: a class of another file that
# wants one of the layers' keys of the method's class as its base, and defines a function of
# the method's name. A key is the layer's scope plus what follows the owner's own scope.
_OVERRIDERS = (
    "UNWIND $methods AS uid MATCH (t:Symbol {uid: uid}) WITH t "
    "MATCH (t)<-[:DEFINES]-(p:Symbol) WHERE p.kind IN ['class', 'interface'] "
    "AND p.rkey IS NOT NULL WITH t, p, substring(p.rkey, size(p.scope) + 1) AS logical "
    "UNWIND $scopes AS scope WITH t, p, scope + '|' + logical AS key "
    "MATCH (w:Want {uid: key}) WITH t, p, w "
    "MATCH (w)<-[r:REFERS]-(c:Symbol) WHERE r.type = 'INHERITS_FROM' "
    "AND c.file_uid <> p.file_uid AND c.uid <> p.uid WITH t, c "
    "MATCH (c)-[:DEFINES]->(m:Symbol) WHERE m.name = t.name AND m.kind = 'function' "
    "WITH m, collect(DISTINCT [t.uid, 'exact']) AS srcs "
    "RETURN 'override' AS how, srcs, m.uid AS dst, properties(m) AS props"
)


# The other parts of ``_inbound``: edges into the targets inside their files, references
# to the targets' keys from any layer, and the targets' owners.
# Each part's ``srcs`` are ``[from, resolution]`` pairs (``_OVERRIDERS``: from uids).
_LOCAL_INTO = (
    "UNWIND $uids AS uid MATCH (t:Symbol {{uid: uid}}) WITH t "
    "MATCH (t)<-[r:{types}]-(n:Symbol) WHERE r.via IS NULL "
    "WITH n, collect(DISTINCT [t.uid, coalesce(r.resolution, 'exact')]) AS srcs "
    "RETURN 'local' AS how, srcs, n.uid AS dst, properties(n) AS props"
)
_KEY_REFERRERS = (
    "UNWIND $keys AS key MATCH (w:Want {uid: key}) WITH w, key "
    "MATCH (w)<-[r:REFERS]-(n:Symbol) WHERE r.type IN $cross "
    "WITH n, collect(DISTINCT [key, coalesce(r.resolution, 'exact')]) AS srcs "
    "RETURN 'key' AS how, srcs, n.uid AS dst, properties(n) AS props"
)
_OWNERS = (
    "UNWIND $owned AS uid MATCH (t:Symbol {uid: uid}) WITH t "
    "MATCH (t)<-[:DEFINES]-(p:Symbol) WITH p, collect([t.uid, 'exact']) AS srcs "
    "RETURN 'parent' AS how, srcs, p.uid AS dst, properties(p) AS props"
)


def _owned(members: list[Props]) -> list[Props]:
    """The members whose owner can matter: not a module's (a module neither inherits nor is
    inherited from), save in Go, whose structural check reads any owner."""
    return [m for m in members if m.get("language") == "go"
            or not str(m.get("parent_id") or "::<module>").endswith("::<module>")]  # fmt: skip


def neighbors(reached: list[tuple[int, Props, str]]) -> list[Neighbor]:
    """A walk's answer: the symbols it reached, nearest first, then by id."""
    found = [Neighbor(symbol_from_props(props), depth, res) for depth, props, res in reached]
    return sorted(found, key=lambda n: (n.depth, n.symbol.id))


def symbol_from_props(props: Props) -> StoredSymbol:
    return StoredSymbol(
        id=props["id"],
        kind=props["kind"],
        name=props["name"],
        qualified_name=props["qualified_name"],
        repo=props["repo"],
        ref=view_ref(props["ref"], props.get("workspace")),
        path=props["path"],
        start_line=int(props["start_line"]),
        end_line=int(props["end_line"]),
        signature=props.get("signature"),
        doc=props.get("doc"),
        parent_id=props.get("parent_id"),
        language=props.get("language"),
        content_hash=props.get("content_hash"),
    )


class ViewReads(ViewInheritance, OverlayRegistry):
    max_walk_rows: int

    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]: ...

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
    # Each primitive answers for a whole frontier in one or two queries and says which
    # member each row came from: (from uid, to uid, to props).

    def _referrers(self, view: View, targets: list[Props], types: tuple[str, ...]) -> list[Pair]:
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
            "UNWIND $keys AS key MATCH (w:Want {uid: key}) WITH w, key "
            "MATCH (w)<-[r:REFERS]-(n:Symbol) WHERE r.type IN $types "
            "RETURN DISTINCT key, n.uid, properties(n), coalesce(r.resolution, 'exact')",
            {"keys": sorted(keys), "types": list(types)},
        )
        return [(t, r[1], r[2], r[3]) for r in rows for t in keys[r[0]] if t != r[1]]

    def _referred(
        self, view: View, sources: list[str], types: tuple[str, ...], local: str | None = None
    ) -> list[Pair]:
        """What the sources' references of ``types`` find in the view; with ``local`` (edge
        types), the sources' edges inside their files too, in the same first round trip."""
        if not sources:
            return []
        query = (
            "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) WITH s "
            "MATCH (s)-[r:REFERS]->(w:Want) WHERE r.type IN $types "
            "RETURN DISTINCT 'key' AS how, s.uid AS src, w.uid AS dst, null AS props, "
            "coalesce(r.resolution, 'exact') AS res"
        )
        if local:
            query += (
                " UNION ALL UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) WITH s "
                f"MATCH (s)-[r:{local}]->(n:Symbol) WHERE r.via IS NULL "
                "RETURN DISTINCT 'local' AS how, s.uid AS src, n.uid AS dst, "
                "properties(n) AS props, coalesce(r.resolution, 'exact') AS res"
            )
        rows = self._read(view.tenant, query, {"uids": sources, "types": list(types)})
        pairs: list[Pair] = [(r[1], r[2], r[3], r[4]) for r in rows if r[0] == "local"]
        by_key: dict[str, set[tuple[str, str]]] = {}
        for how, src, key, _props, res in rows:
            if how == "key":
                for candidate in view.keys(key):
                    by_key.setdefault(candidate, set()).add((src, res))
        if not by_key:
            return pairs
        rows = self._read(
            view.tenant,
            "UNWIND $keys AS key MATCH (t:Symbol {rkey: key}) RETURN key, t.uid, properties(t)",
            {"keys": sorted(by_key)},
        )
        return pairs + [(src, r[1], r[2], res) for r in rows for src, res in by_key[r[0]]
                        if src != r[1]]  # fmt: skip

    def _inbound(
        self, view: View, targets: list[Props], types: tuple[str, ...],
        parents: dict[str, Props] | None = None,
    ) -> list[Pair]:  # fmt: skip
        """Edges into the targets inside their files and references to them from any file,
        in one round trip (UNION ALL of the parts that apply); with ``parents``, the
        targets' owners are filled in on the way. Each part returns a
        found node once with the list of targets it came from: a hub's properties cross
        the wire once, not once per edge (that was most of a wide frontier's time)."""
        keys: dict[str, set[str]] = {}
        for target in targets:
            if target.get("rkey"):
                for key in view.keys(target["rkey"]):
                    keys.setdefault(key, set()).add(target["uid"])
        uids = [t["uid"] for t in targets]
        if not uids:
            return []
        cross = [t for t in types if t != "OVERRIDES"]
        owned = [] if parents is None else [t["uid"] for t in _owned(targets)]
        methods = [t["uid"] for t in _owned(targets) if t.get("kind") == "function"]
        parts = [_LOCAL_INTO.format(types="|".join(types))]
        if keys and cross:
            parts.append(_KEY_REFERRERS)
        if owned:
            parts.append(_OWNERS)
        if methods and "OVERRIDES" in types:
            parts.append(_OVERRIDERS)
        rows = self._read(
            view.tenant,
            " UNION ALL ".join(parts),
            {"uids": uids, "keys": sorted(keys), "cross": cross, "owned": owned,
             "methods": methods, "scopes": view.scopes},
        )  # fmt: skip
        pairs: list[Pair] = []
        for how, sources, dst, props in rows:
            if how == "key":
                sources = [[t, res] for key, res in sources for t in keys[key]]
            if how == "parent":
                assert parents is not None
                parents.update(dict.fromkeys((src for src, _ in sources), props))
                continue
            pairs += [(src, dst, props, res) for src, res in sources if src != dst]
        return pairs

    def _seen(self, view: View, pairs: Iterable[Pair]) -> list[Pair]:
        return [p for p in pairs if view.visible(p[2]["scope"], p[2]["path"])]

    def _hop(
        self, view: View, frontier: list[Props], types: tuple[str, ...], inbound: bool,
        parents: dict[str, Props] | None = None,
    ) -> list[Pair]:  # fmt: skip
        uids = [p["uid"] for p in frontier]
        if inbound:
            pairs = self._inbound(view, frontier, types, parents)
        else:
            cross = tuple(t for t in types if t != "OVERRIDES")
            pairs = self._referred(view, uids, cross, local="|".join(types))
        return self._seen(view, pairs)

    # -- walks ----------------------------------------------------------------------------

    def view_walks(
        self, view: View, symbol_ids: list[str], depth: int, types: tuple[str, ...],
        inbound: bool, inherited: bool, starts: list[Props], cap: int,
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> Walks:  # fmt: skip
        """Breadth first like ``CypherGraphStore._walks``, over the view, from each symbol
        at once; ``starts``: the symbols' rows in the layers (``view_with`` reads them).
        Name-only calls are not read in a view (its walks give exact and inferred ones)."""
        allowed = set(CallResolution.at_least(weakest))
        tops: dict[str, Props] = {}
        for _, props in self._visible(view, [[p["uid"], p] for p in starts]):
            tops.setdefault(props["id"], props)  # the top layer's row comes first
        walks = Walks({sid: tops[sid] for sid in symbol_ids if sid in tops}, cap)
        for level in range(1, depth + 1):
            frontier = walks.frontier()
            if not frontier:
                break
            # The owners are read on the way only for a walk through inheritance.
            parents: dict[str, Props] | None = {} if inherited else None
            pairs = self._hop(view, frontier, types, inbound, parents)
            if parents is not None:
                pairs += self._inherited_callers(view, frontier, parents, weakest)
            walks.advance((p for p in pairs if p[3] in allowed), level)
        return walks
