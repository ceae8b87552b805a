"""Callers through a chain of two calls on results: ``AnnotationSpec.builder(..).addMember(..)
.build()`` in another file than ``AnnotationSpec`` wants ``<builder's key>().addMember().build``
(``receiver_types.joined``). Callers of ``Builder.build`` include it when ``builder`` returns a
class that defines ``addMember`` and ``addMember`` returns the class that defines ``build``.

The walk starts from the calls of the method's name on a call's result (the Wants whose
``rtail2`` is ``scope|build``, ``MARK_TAILS``; a graph written before them has none, as its
files' references had no such keys) and checks both RETURNS edges;
each is a reference to the class's key (another file) or a plain edge (the same file), read
as one key either way. A method the class inherits is not followed at the middle call.
"""

from __future__ import annotations

_CALLS = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WHERE t.rkey IS NOT NULL "
    "WITH t, t.scope + '|' + t.name AS tail MATCH (w:Want {rtail2: tail}) "
    "WITH t, w, split(left(w.uid, size(w.uid) - size(t.name) - 3), '().') AS hops "
    "WHERE size(hops) = 2 WITH t, w, hops MATCH (f:Symbol {rkey: hops[0]}) "
    "WITH t, w, f, hops[1] AS g "
)
# A RETURNS edge out of ``x``, either form, as the key of the class it names. A function's
# outgoing edges are few: filtering them is cheaper than a read per form (four reads cost
# ~2.5 ms a callers walk at p50 on 400 of sympy's files; one read ~1 ms).
_RETURNED = (
    "MATCH ({x})-[{q}]->({y}) WHERE (type({q}) = 'RETURNS' AND {q}.via IS NULL) "
    "OR (type({q}) = 'REFERS' AND {q}.type = 'RETURNS') "
    "WITH {keep}, CASE type({q}) WHEN 'RETURNS' THEN {y}.rkey ELSE {y}.uid END AS {key} "
)
CALLERS_THROUGH_TWO_RETURNS = (
    _CALLS
    + _RETURNED.format(x="f", q="q", y="v", keep="t, w, g", key="ckey")
    + "MATCH (c:Symbol {rkey: ckey}) WITH t, w, g, c "
    "MATCH (c)-[:DEFINES]->(m:Symbol {name: g}) WITH t, w, m "
    "MATCH (t)<-[:DEFINES]-(d:Symbol) WITH t, w, m, d.rkey AS dkey "
    + _RETURNED.format(x="m", q="q2", y="z", keep="t, w, dkey", key="mkey")
    + "WITH t, w WHERE mkey = dkey "
    "WITH DISTINCT t, w MATCH (w)<-[r:REFERS]-(n:Symbol) "
    "WHERE n.tenant = $tenant AND r.type IN ['CALLS', 'INSTANTIATES'] "
    "AND coalesce(r.resolution, 'exact') IN $allowed "
    "WITH n, collect(DISTINCT [t.uid, coalesce(r.resolution, 'exact')]) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)
