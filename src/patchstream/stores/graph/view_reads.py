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
from patchstream.stores.graph.base import Neighbor, StoredSymbol
from patchstream.stores.graph.overlay_registry import OverlayRegistry
from patchstream.stores.overlays import View

Props = dict[str, Any]
Pair = tuple[str, str, Props]  # (from uid, to uid, to props)
_CALLS = ("CALLS", "INSTANTIATES")
_INHERITING = ("class", "interface")


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
    "WITH m, collect(DISTINCT t.uid) AS srcs "
    "RETURN 'override' AS how, srcs, m.uid AS dst, properties(m) AS props"
)


# The other parts of ``_inbound``: edges into the targets inside their files, references
# to the targets' keys from any layer, and the targets' owners.
_LOCAL_INTO = (
    "UNWIND $uids AS uid MATCH (t:Symbol {{uid: uid}}) WITH t "
    "MATCH (t)<-[r:{types}]-(n:Symbol) WHERE r.via IS NULL WITH n, collect(DISTINCT t.uid) AS srcs "
    "RETURN 'local' AS how, srcs, n.uid AS dst, properties(n) AS props"
)
_KEY_REFERRERS = (
    "UNWIND $keys AS key MATCH (w:Want {uid: key}) WITH w, key "
    "MATCH (w)<-[r:REFERS]-(n:Symbol) WHERE r.type IN $cross "
    "WITH n, collect(DISTINCT key) AS srcs "
    "RETURN 'key' AS how, srcs, n.uid AS dst, properties(n) AS props"
)
_OWNERS = (
    "UNWIND $owned AS uid MATCH (t:Symbol {uid: uid}) WITH t "
    "MATCH (t)<-[:DEFINES]-(p:Symbol) WITH p, collect(t.uid) AS srcs "
    "RETURN 'parent' AS how, srcs, p.uid AS dst, properties(p) AS props"
)


# A class's bases and subclasses, for ``_lineages``: a prefix naming the classes ``s``, then
# the keys their bases want, their bases in their own file, and their subclasses in any
# layer (local edges, and references to the classes' keys in every layer, built as
# ``_OVERRIDERS`` builds them).
_GIVEN_UP = "UNWIND $up AS uid MATCH (s:Symbol {uid: uid}) WITH s "
_GIVEN_DOWN = "UNWIND $down AS uid MATCH (s:Symbol {uid: uid}) WITH s "
_BASES_WANTED = (
    "MATCH (s)-[r:REFERS]->(w:Want) WHERE r.type = 'INHERITS_FROM' "
    "WITH w, collect(DISTINCT s.uid) AS srcs RETURN 'wanted' AS how, srcs, w.uid AS dst, "
    "null AS props"
)
_BASES_LOCAL = (
    "MATCH (s)-[r:INHERITS_FROM]->(n:Symbol) WHERE r.via IS NULL "
    "WITH n, collect(DISTINCT s.uid) AS srcs "
    "RETURN 'base' AS how, srcs, n.uid AS dst, properties(n) AS props"
)
_SUBCLASSES_LOCAL = (
    "MATCH (s)<-[r:INHERITS_FROM]-(n:Symbol) WHERE r.via IS NULL "
    "WITH n, collect(DISTINCT s.uid) AS srcs "
    "RETURN 'subclass' AS how, srcs, n.uid AS dst, properties(n) AS props"
)
_SUBCLASSES_BY_KEY = (
    "WITH s WHERE s.rkey IS NOT NULL UNWIND $scopes AS scope "
    "WITH s, scope + '|' + substring(s.rkey, size(s.scope) + 1) AS key "
    "MATCH (w:Want {uid: key})<-[r:REFERS]-(n:Symbol) WHERE r.type = 'INHERITS_FROM' "
    "WITH n, collect(DISTINCT s.uid) AS srcs "
    "RETURN 'subclass' AS how, srcs, n.uid AS dst, properties(n) AS props"
)
_UP = (_BASES_WANTED, _BASES_LOCAL)
_DOWN = (_SUBCLASSES_LOCAL, _SUBCLASSES_BY_KEY)


def _owned(members: list[Props]) -> list[Props]:
    """The members whose owner can matter: not a module's (a module neither inherits nor is
    inherited from), save in Go, whose structural check reads any owner."""
    return [m for m in members if m.get("language") == "go"
            or not str(m.get("parent_id") or "::<module>").endswith("::<module>")]  # fmt: skip


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


class ViewReads(OverlayRegistry):
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
            "MATCH (w)<-[r:REFERS]-(n:Symbol) "
            "WHERE r.type IN $types RETURN DISTINCT key, n.uid, properties(n)",
            {"keys": sorted(keys), "types": list(types)},
        )
        return [(t, r[1], r[2]) for r in rows for t in keys[r[0]] if t != r[1]]

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
            "RETURN DISTINCT 'key' AS how, s.uid AS src, w.uid AS dst, null AS props"
        )
        if local:
            query += (
                " UNION ALL UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) WITH s "
                f"MATCH (s)-[r:{local}]->(n:Symbol) WHERE r.via IS NULL "
                "RETURN DISTINCT 'local' AS how, s.uid AS src, n.uid AS dst, properties(n) AS props"
            )
        rows = self._read(view.tenant, query, {"uids": sources, "types": list(types)})
        pairs: list[Pair] = [(r[1], r[2], r[3]) for r in rows if r[0] == "local"]
        wants = [(r[1], r[2]) for r in rows if r[0] == "key"]
        by_key: dict[str, set[str]] = {}
        for src, key in wants:
            for candidate in view.keys(key):
                by_key.setdefault(candidate, set()).add(src)
        if not by_key:
            return pairs
        rows = self._read(
            view.tenant,
            "UNWIND $keys AS key MATCH (t:Symbol {rkey: key}) RETURN key, t.uid, properties(t)",
            {"keys": sorted(by_key)},
        )
        return pairs + [(src, r[1], r[2]) for r in rows for src in by_key[r[0]] if src != r[1]]

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
                sources = [t for key in sources for t in keys[key]]
            if how == "parent":
                assert parents is not None
                parents.update(dict.fromkeys(sources, props))
                continue
            pairs += [(src, dst, props) for src in dict.fromkeys(sources) if src != dst]
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

    # -- inheritance ----------------------------------------------------------------------

    def _children(self, view: View, parents: Iterable[Props], names: Iterable[str]
                  ) -> dict[str, list[Props]]:  # fmt: skip
        """parent uid -> the symbols it defines; only those named in ``names`` come whole
        (the walks need the other children's names alone, and a big class's members are
        most of a wide walk's bytes)."""
        uids = sorted({p["uid"] for p in parents})
        if not uids:
            return {}
        rows = self._read(
            view.tenant,
            "UNWIND $uids AS uid MATCH (p:Symbol {uid: uid})-[:DEFINES]->(c:Symbol) "
            "RETURN p.uid, c.name, CASE WHEN c.name IN $names THEN properties(c) END",
            {"uids": uids, "names": sorted(set(names))},
        )
        out: dict[str, list[Props]] = {}
        for parent, name, child in rows:
            out.setdefault(parent, []).append(child or {"name": name})
        return out

    def _lineages(
        self, view: View, classes: list[Props], levels: int
    ) -> tuple[dict[str, dict[str, Props]], dict[str, dict[str, Props]]]:
        """(below, above): class uid -> the classes that inherit from it, and the classes it
        inherits from, up to ``levels`` levels, for every class at once. Each level is one
        round trip for both directions (plus one to resolve the keys the bases want);
        folding the first level into the hop's query was measured slower (a UNION runs its
        parts one after the other, and the owners would be matched twice)."""
        reach: dict[bool, dict[str, dict[str, Props]]] = {
            up: {c["uid"]: {} for c in classes} for up in (True, False)
        }
        # direction -> uid -> (the classes it was reached from, its props)
        frontiers = {up: {c["uid"]: ({c["uid"]}, c) for c in classes} for up in (True, False)}
        for _ in range(levels):
            up, down = frontiers[True], frontiers[False]
            if not up and not down:
                break
            parts = [_GIVEN_UP + p for p in _UP if up] + [_GIVEN_DOWN + p for p in _DOWN if down]
            params = {"up": list(up), "down": list(down), "scopes": view.scopes}
            rows = self._read(view.tenant, " UNION ALL ".join(parts), params)
            pairs: dict[bool, list[Pair]] = {True: [], False: []}
            wants: dict[str, set[str]] = {}
            for how, sources, dst, props in rows:
                if how == "wanted":
                    for candidate in view.keys(dst):
                        wants.setdefault(candidate, set()).update(sources)
                else:
                    pairs[how == "base"] += [(src, dst, props) for src in sources]
            if wants:
                pairs[True] += [(src, uid, props) for key, uid, props in self._read(
                    view.tenant,
                    "UNWIND $keys AS key MATCH (t:Symbol {rkey: key}) "
                    "RETURN key, t.uid, properties(t)",
                    {"keys": sorted(wants)},
                ) for src in wants[key]]  # fmt: skip
            for direction in (True, False):
                following: dict[str, tuple[set[str], Props]] = {}
                for src, uid, props in self._seen(view, pairs[direction]):
                    for origin in frontiers[direction].get(src, ((), None))[0]:
                        if uid != src and uid not in reach[direction][origin]:
                            reach[direction][origin][uid] = props
                            following.setdefault(uid, (set(), props))[0].add(origin)
                frontiers[direction] = following
        return reach[False], reach[True]

    def _inherited_callers(self, view: View, frontier: list[Props], parents: dict[str, Props]
                           ) -> list[Pair]:  # fmt: skip
        """The view's versions of the plain walks through subclasses, interfaces and Go's
        structural interfaces (``statements.CALLERS_THROUGH_*``), for the whole frontier
        (``parents``: the owners ``_hop`` read on its way)."""
        owners = list({p["uid"]: p for p in parents.values()}.values())
        if not owners:
            return []
        # Only classes and interfaces take part in inheritance (a module never does).
        classes = [o for o in owners if o.get("kind") in _INHERITING]
        below, above = self._lineages(view, classes, 3)
        interfaces = [a for found in above.values() for a in found.values()
                      if a.get("kind") == "interface"]  # fmt: skip
        go_owners = [parents[t["uid"]] for t in frontier
                     if t.get("language") == "go" and t["uid"] in parents]  # fmt: skip
        kids = self._children(
            view,
            [*go_owners, *interfaces, *(s for found in below.values() for s in found.values())],
            (t["name"] for t in frontier),
        )
        go = self._go_interface_methods(view, [t for t in frontier if t.get("language") == "go"])
        wanting: list[Props] = []
        methods: list[Props] = []
        for target in frontier:
            owner = parents.get(target["uid"])
            if owner is None:
                continue
            name = target["name"]
            wanting += [
                {**sub, "uid": sub["uid"], "rkey": f"{sub['rkey']}.{name}"}
                for sub in below.get(owner["uid"], {}).values()
                if sub.get("rkey") and not any(c["name"] == name for c in kids.get(sub["uid"], []))
            ]
            ancestors = above.get(owner["uid"], {}).values()
            methods += [c for i in ancestors if i.get("kind") == "interface"
                        for c in kids.get(i["uid"], []) if c["name"] == name]  # fmt: skip
            has = {c["name"] for c in kids.get(owner["uid"], [])}
            methods += [m for m, needed in go.get(name, []) if needed <= has]
        pairs = self._referrers(view, wanting, _CALLS)
        unique = list({m["uid"]: m for m in methods}.values())
        pairs += self._inbound(view, unique, ("CALLS",))
        return self._seen(view, pairs)

    def _go_interface_methods(self, view: View, targets: list[Props]
                              ) -> dict[str, list[tuple[Props, set[str]]]]:  # fmt: skip
        """name -> (an interface method of that name the view sees, the names its interface
        declares), for the names of Go targets."""
        names = sorted({t["name"] for t in targets})
        if not names:
            return {}
        rows = self._read(
            view.tenant,
            "UNWIND $names AS name MATCH (m:Symbol {name: name}) "
            "WHERE m.scope IN $scopes AND m.language = 'go' "
            "MATCH (i:Symbol {kind: 'interface'})-[:DEFINES]->(m) "
            "MATCH (i)-[:DEFINES]->(wanted:Symbol) "
            "RETURN name, properties(m), collect(DISTINCT wanted.name)",
            {"names": names, "scopes": view.scopes},
        )
        out: dict[str, list[tuple[Props, set[str]]]] = {}
        for name, props, needed in rows:
            if view.visible(props["scope"], props["path"]):
                out.setdefault(name, []).append((props, set(needed)))
        return out

    # -- walks ----------------------------------------------------------------------------

    def view_walk(
        self, view: View, symbol_id: str, depth: int, types: tuple[str, ...], inbound: bool,
        inherited: bool = False, start: list[Props] | None = None,
    ) -> list[Neighbor]:  # fmt: skip
        """Breadth first like ``CypherGraphStore._walk``, over the view; ``start``: the
        symbol's rows in the layers when ``view_with`` read them already."""
        if start is None:
            start = [r[1] for r in self._read(
                view.tenant,
                "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) RETURN s.uid, properties(s)",
                {"uids": [f"{scope}|{symbol_id}" for scope in view.scopes]},
            )]  # fmt: skip
        frontier = [p for _, p in self._visible(view, [[p["uid"], p] for p in start])][:1]
        seen = {p["uid"] for p in frontier}
        found: list[Neighbor] = []
        for level in range(1, depth + 1):
            if not frontier or len(found) >= self.max_walk_rows:
                break
            # The owners are read on the way only for a walk through inheritance.
            parents: dict[str, Props] | None = {} if inherited else None
            pairs = self._hop(view, frontier, types, inbound, parents)
            if parents is not None:
                pairs += self._inherited_callers(view, frontier, parents)
            frontier = []
            for _src, uid, props in pairs:
                if uid in seen or len(found) >= self.max_walk_rows:
                    continue
                seen.add(uid)
                frontier.append(props)
                found.append(Neighbor(symbol_from_props(props), level))
        return sorted(found, key=lambda n: (n.depth, n.symbol.id))
