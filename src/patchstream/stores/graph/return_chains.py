"""Callers through a chain of two calls on results: ``AnnotationSpec.builder(..).addMember(..)
.build()`` in another file than ``AnnotationSpec`` wants ``<builder's key>().addMember().build``
(``receiver_types.joined``). Callers of ``Builder.build`` include it when ``builder`` returns a
class that defines ``addMember`` and ``addMember`` returns the class that defines ``build``.

The walk starts from the calls of the method's name on a call's result (the Wants whose
``rtail2`` is ``scope|build``, ``MARK_TAILS``; a graph written before them has none, as its
files' references had no such keys) and checks both RETURNS edges;
each is a reference to the class's key (another file) or a plain edge (the same file), so
there are four reads. A method the class inherits is not followed at the middle call.
"""

from __future__ import annotations

_CALLS = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WHERE t.rkey IS NOT NULL "
    "WITH t, t.scope + '|' + t.name AS tail MATCH (w:Want {rtail2: tail}) "
    "WITH t, w, split(left(w.uid, size(w.uid) - size(t.name) - 3), '().') AS hops "
    "WHERE size(hops) = 2 WITH t, w, hops MATCH (f:Symbol {rkey: hops[0]}) "
    "WITH t, w, f, hops[1] AS g "
)
# The class ``f`` returns: another file's (through a Want of its key) or its own file's.
_FIRST = (
    "MATCH (f)-[q:REFERS]->(v:Want) WHERE q.type = 'RETURNS' WITH t, w, g, v "
    "MATCH (c:Symbol {rkey: v.uid}) ",
    "MATCH (f)-[q:RETURNS]->(c:Symbol) WHERE q.via IS NULL ",
)
_MIDDLE = (
    "WITH t, w, g, c MATCH (c)-[:DEFINES]->(m:Symbol {name: g}) WITH t, w, m "
    "MATCH (t)<-[:DEFINES]-(d:Symbol) WITH t, w, m, d "
)
# ``g`` returns the class that defines the method walked from.
_SECOND = (
    "MATCH (m)-[q2:REFERS]->(x:Want) WHERE q2.type = 'RETURNS' AND x.uid = d.rkey ",
    "MATCH (m)-[q2:RETURNS]->(d) WHERE q2.via IS NULL ",
)
_CALLERS = (
    "WITH DISTINCT t, w MATCH (w)<-[r:REFERS]-(n:Symbol) "
    "WHERE n.tenant = $tenant AND r.type IN ['CALLS', 'INSTANTIATES'] "
    "AND coalesce(r.resolution, 'exact') IN $allowed "
    "WITH n, collect(DISTINCT [t.uid, coalesce(r.resolution, 'exact')]) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)

CALLERS_THROUGH_TWO_RETURNS = tuple(
    _CALLS + first + _MIDDLE + second + _CALLERS for first in _FIRST for second in _SECOND
)
