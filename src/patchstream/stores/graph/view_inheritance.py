"""The walks of a view through inheritance: a mixin of ``ViewReads``.

The view's versions of the plain walks through subclasses, interfaces and Go's structural
interfaces (``statements.CALLERS_THROUGH_*``): a class's lineage is read level by level
across the layers, both directions in one round trip per level.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any

from patchstream.schemas.graph import CallResolution
from patchstream.stores.graph.view_types import Pair, Props
from patchstream.stores.overlays import View

_CALLS = ("CALLS", "INSTANTIATES")
_INHERITING = ("class", "interface")

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


class ViewInheritance(abc.ABC):
    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]: ...

    @abc.abstractmethod
    def _seen(self, view: View, pairs: Iterable[Pair]) -> list[Pair]: ...

    @abc.abstractmethod
    def _referrers(self, view: View, targets: list[Props], types: tuple[str, ...]
                   ) -> list[Pair]: ...  # fmt: skip

    @abc.abstractmethod
    def _inbound(
        self, view: View, targets: list[Props], types: tuple[str, ...],
        parents: dict[str, Props] | None = None,
    ) -> list[Pair]: ...  # fmt: skip

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
                    pairs[how == "base"] += [(src, dst, props, "exact") for src in sources]
            if wants:
                pairs[True] += [(src, uid, props, "exact") for key, uid, props in self._read(
                    view.tenant,
                    "UNWIND $keys AS key MATCH (t:Symbol {rkey: key}) "
                    "RETURN key, t.uid, properties(t)",
                    {"keys": sorted(wants)},
                ) for src in wants[key]]  # fmt: skip
            for direction in (True, False):
                following: dict[str, tuple[set[str], Props]] = {}
                for src, uid, props, _ in self._seen(view, pairs[direction]):
                    for origin in frontiers[direction].get(src, ((), None))[0]:
                        if uid != src and uid not in reach[direction][origin]:
                            reach[direction][origin][uid] = props
                            following.setdefault(uid, (set(), props))[0].add(origin)
                frontiers[direction] = following
        return reach[False], reach[True]

    def _inherited_callers(self, view: View, frontier: list[Props], parents: dict[str, Props],
                           weakest: CallResolution) -> list[Pair]:  # fmt: skip
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
        methods: dict[str, tuple[Props, set[str]]] = {}  # uid -> (method, targets)
        for target in frontier:
            owner = parents.get(target["uid"])
            if owner is None:
                continue
            name = target["name"]
            # A subclass's key for the name, on behalf of the target (the pair's source).
            wanting += [
                {**sub, "uid": target["uid"], "rkey": f"{sub['rkey']}.{name}"}
                for sub in below.get(owner["uid"], {}).values()
                if sub.get("rkey") and not _defines(kids.get(sub["uid"], []), name)
            ]
            ancestors = above.get(owner["uid"], {}).values()
            mine = [c for i in ancestors if i.get("kind") == "interface"
                    for c in kids.get(i["uid"], []) if c["name"] == name]  # fmt: skip
            has = {c["name"] for c in kids.get(owner["uid"], [])}
            mine += [m for m, needed in go.get(name, []) if needed <= has]
            for method in mine:
                methods.setdefault(method["uid"], (method, set()))[1].add(target["uid"])
        # What another function returns (``current().find()``): the key ``<f's key>().m``;
        # a parameter of a callback passed to f (``operate((s) => s.m())``): ``<f's key>(*).m``.
        joins = [("RETURNS", "()")]
        if weakest.rank >= CallResolution.INFERRED.rank:
            joins.append(("CALLBACK_PARAM", "(*)"))
        # A subclass that does not define the method inherits it: what names the subclass
        # counts too. Target -> the classes whose producers reach it.
        holders: dict[str, list[Props]] = {}
        for target in frontier:
            owner = parents.get(target["uid"])
            if owner is not None and target.get("rkey"):
                holders[target["uid"]] = [owner, *(
                    sub for sub in below.get(owner["uid"], {}).values()
                    if not _defines(kids.get(sub["uid"], []), target["name"])
                )]  # fmt: skip
        subclasses = [sub for found in below.values() for sub in found.values()]
        for edge, marker in joins:
            producers = self._producers(view, [*classes, *subclasses], edge)
            wanting += [
                {**f, "uid": target["uid"], "rkey": f"{f['rkey']}{marker}.{target['name']}"}
                for target in frontier for holder in holders.get(target["uid"], [])
                for f in producers.get(holder["uid"], []) if f.get("rkey")
            ]  # fmt: skip
        pairs = self._referrers(view, wanting, _CALLS)
        # Callers of an interface method count for each target that implements it (inferred).
        if methods and weakest.rank >= CallResolution.INFERRED.rank:
            pairs += [(target, dst, props, CallResolution.INFERRED.value)
                      for src, dst, props, _ in self._inbound(
                          view, [m for m, _ in methods.values()], ("CALLS",))
                      for target in methods[src][1]]  # fmt: skip
            pairs += self._interface_returns(view, interfaces, kids, methods)
        return self._seen(view, pairs)

    def _interface_returns(self, view: View, interfaces: list[Props],
                           kids: dict[str, list[Props]],
                           methods: dict[str, tuple[Props, set[str]]]) -> list[Pair]:  # fmt: skip
        """``c.backing().get()`` with ``backing()`` declared to return the interface: the
        key ``<backing's key>().get``, an inferred caller of each implementation
        (``statements.CALLERS_THROUGH_INTERFACE_RETURNS``)."""
        owner_of = {c["uid"]: i["uid"] for i in interfaces
                    for c in kids.get(i["uid"], []) if "uid" in c}  # fmt: skip
        producers = self._producers(view, interfaces, "RETURNS")
        wanting = [
            {**f, "uid": target, "rkey": f"{f['rkey']}().{method['name']}"}
            for uid, (method, targets) in methods.items()
            for f in producers.get(owner_of.get(uid, ""), []) if f.get("rkey")
            for target in targets
        ]  # fmt: skip
        return [(src, dst, props, CallResolution.INFERRED.value)
                for src, dst, props, _ in self._referrers(view, wanting, _CALLS)]  # fmt: skip

    def _producers(self, view: View, classes: list[Props], edge: str) -> dict[str, list[Props]]:
        """class uid -> the functions the view sees whose ``edge`` (RETURNS, CALLBACK_PARAM)
        names it: a plain edge in the class's file, or a reference to one of the layers' keys
        of the class."""
        keys: dict[str, str] = {}
        for cls in classes:
            if cls.get("rkey"):
                keys.update({key: str(cls["uid"]) for key in view.keys(cls["rkey"])})
        if not classes:
            return {}
        rows = self._read(
            view.tenant,
            "UNWIND $uids AS uid MATCH (c:Symbol {uid: uid}) WITH c "
            f"MATCH (c)<-[r:{edge}]-(f:Symbol) WHERE r.via IS NULL "
            "RETURN c.uid AS found, properties(f) AS props "
            "UNION ALL UNWIND $keys AS key MATCH (w:Want {uid: key}) WITH w, key "
            f"MATCH (w)<-[r:REFERS]-(f:Symbol) WHERE r.type = '{edge}' "
            "RETURN key AS found, properties(f) AS props",
            {"uids": [c["uid"] for c in classes], "keys": sorted(keys)},
        )
        out: dict[str, list[Props]] = {}
        for found, props in rows:
            if view.visible(props["scope"], props["path"]):
                out.setdefault(keys.get(found, found), []).append(props)
        return out

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


def _defines(children: list[Props], name: str) -> bool:
    """Whether a class's own members hide a base's ``name``; a Java field never hides a
    method (``statements._OWN_MEMBER``)."""
    return any(
        c["name"] == name and not (c.get("kind") == "variable" and c.get("language") == "java")
        for c in children
    )
