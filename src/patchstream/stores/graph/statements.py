"""The openCypher statements every graph adapter runs (FalkorDB and Memgraph share them).

Model (one graph per tenant on FalkorDB, one database on Memgraph; every node carries
``tenant`` either way):

- ``(:Symbol {uid, id, tenant, repo, ref, path, file_uid, kind, ..., rkey, okey, fp})`` where
  ``uid = scope|id``, ``rkey`` is the key references use to find it (see ``keys``) and
  ``okey`` its class's key when no DEFINES edge can say it (a C++ method out of its class's
  file; ``keys.owner_key``).
- Edges inside a file are typed relationships without ``via``.
- A reference out of the file is ``(s)-[:REFERS {type, dst}]->(:Want {uid: key})`` for each
  candidate key; when a symbol with that ``rkey`` exists the typed edge is materialized as
  ``(s)-[:TYPE {via: dst}]->(t)``. Deleting ``t`` (DETACH) drops the materialized edge and
  leaves the ``REFERS``: the reference is unresolved again, never dangling.
- Cross-file overrides are materialized as ``OVERRIDES {via: '<inherit>'}``.
- ``(:Fence {uid: file_uid, version, applied_at, deleted})`` holds each file's applied
  version; it stays after a delete so late, older deliveries are still refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from patchstream.schemas.graph import CallResolution, EdgeType
from patchstream.stores.graph.history_statements import HISTORY_INDEXES
from patchstream.stores.graph.return_chains import CALLERS_THROUGH_TWO_RETURNS

Statement = tuple[str, dict[str, Any]]

INHERITED = "<inherit>"
# The edge types that carry a ``resolution`` (``CallResolution``).
CALL_TYPES = frozenset({EdgeType.CALLS.value, EdgeType.INSTANTIATES.value})
REF_TYPES = (EdgeType.CALLS, EdgeType.IMPORTS, EdgeType.INHERITS_FROM, EdgeType.INSTANTIATES)
INDEXES = (
    ("Symbol", "uid"),
    ("Symbol", "file_uid"),
    ("Symbol", "rkey"),
    ("Symbol", "parent_uid"),
    ("Symbol", "name"),
    ("Symbol", "qualified_name"),
    ("Want", "uid"),
    ("Want", "tail"),
    ("Want", "rtail"),
    ("Want", "rtail2"),
    ("Fence", "uid"),
    ("Fence", "scope"),
    ("TraceMark", "uid"),
    ("Run", "uid"),
    ("Session", "uid"),
    ("RunEvent", "run_uid"),
    ("RunEvent", "uid"),
    ("Memory", "uid"),
    ("Memory", "owner"),
    ("MemoryDecision", "uid"),
    ("Overlay", "uid"),
    ("Overlay", "tenant"),
    *HISTORY_INDEXES,
)
ROWS_PER_STATEMENT = 500
LIST_PARAMS = ("rows", "uids", "keys", "fuids")  # the list an UNWIND statement runs over
MAX_DEPTH = 5

READ_FENCE = "MATCH (f:Fence {uid: $fuid}) RETURN f.version, f.deleted, f.applied_at, f.module"
READ_FENCES = (
    "UNWIND $uids AS uid MATCH (f:Fence {uid: uid}) "
    "RETURN f.uid, f.version, f.deleted, f.module, f.content_hash"
)
READ_SYMBOLS = "MATCH (s:Symbol {file_uid: $fuid}) RETURN s.id, s.fp, s.rkey"
READ_LOCAL_EDGES = (
    "MATCH (s:Symbol {file_uid: $fuid})-[r]->(t:Symbol) WHERE r.via IS NULL "
    "RETURN s.id, type(r), t.id, r.resolution"
)
READ_REF_EDGES = (
    "MATCH (s:Symbol {file_uid: $fuid})-[r:REFERS]->(w:Want) "
    "RETURN s.id, r.type, r.dst, r.resolution, w.uid"
)
DELETE_SYMBOLS = "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) DETACH DELETE s"
UPSERT_SYMBOLS = "UNWIND $rows AS row MERGE (s:Symbol {uid: row.uid}) SET s += row"
DELETE_REFERS = (
    "UNWIND $rows AS row MATCH (s:Symbol {uid: row.src})-[r:REFERS]->(:Want) "
    "WHERE r.type = row.type AND r.dst = row.dst DELETE r"
)
ADD_REFERS = (
    "UNWIND $rows AS row MATCH (s:Symbol {uid: row.src}) UNWIND row.keys AS key "
    "MERGE (w:Want {uid: key}) MERGE (s)-[:REFERS {type: row.type, dst: row.dst}]->(w)"
)
# A call's reference: its resolution is part of what is merged (never null here).
ADD_CALL_REFERS = (
    "UNWIND $rows AS row MATCH (s:Symbol {uid: row.src}) UNWIND row.keys AS key "
    "MERGE (w:Want {uid: key}) "
    "MERGE (s)-[:REFERS {type: row.type, dst: row.dst, resolution: row.resolution}]->(w)"
)
# ``tail`` (``scope|m``) marks the Wants of an unresolvable method call for the name-only
# walks; a key is wanted by one reference string, so its tail never changes. ``rtail``, the
# same, marks only the keys of a call on a function's result (``<f's key>().m``); ``rtail2``
# those of a call on a call's result (``<f's key>().g().m``, ``return_chains``).
MARK_TAILS = (
    "UNWIND $rows AS row MATCH (w:Want {uid: row.key}) "
    "SET w.tail = row.tail, w.rtail = row.rtail, w.rtail2 = row.rtail2"
)
DROP_RESOLVED_INTO = (
    "UNWIND $uids AS uid MATCH (:Symbol)-[r]->(t:Symbol {uid: uid}) "
    "WHERE r.via IS NOT NULL DELETE r"
)
# Each rule is written twice, anchored on either end's indexed ``file_uid``, because an
# OR across both ends makes planners scan every edge of the type. Statements over ``$fuids``
# (a batch's files: ``planner.merge_plans``) bind the files' symbols by the indexed
# ``file_uid`` first and only then expand (``WITH``): in one MATCH, FalkorDB planned the
# UNWIND form of the rule anchored on ``b`` as a scan of every Symbol
# (``tests/integration/test_graph_plans.py`` holds every planned statement to index lookups).
_FILE_SYMBOLS = "UNWIND $fuids AS fuid MATCH (x:Symbol {file_uid: fuid}) WITH x "
DROP_INHERITED_OVERRIDES = (
    _FILE_SYMBOLS + "MATCH (x)-[r:OVERRIDES]->(:Symbol) WHERE r.via = $via DELETE r",
    _FILE_SYMBOLS + "MATCH (:Symbol)-[r:OVERRIDES]->(x) WHERE r.via = $via DELETE r",
)
_OVERRIDES_OF = (
    "WHERE c.file_uid <> b.file_uid WITH c, b "
    "MATCH (m:Symbol {parent_uid: c.uid}) WITH m, b "
    "MATCH (bm:Symbol {parent_uid: b.uid}) "
    "WHERE m.name = bm.name AND m.kind = 'function' AND bm.kind = 'function' "
    "MERGE (m)-[:OVERRIDES {via: $via}]->(bm)"
)
ADD_INHERITED_OVERRIDES = (
    _FILE_SYMBOLS + "MATCH (x)-[:INHERITS_FROM]->(b:Symbol) WITH x AS c, b " + _OVERRIDES_OF,
    _FILE_SYMBOLS + "MATCH (c:Symbol)-[:INHERITS_FROM]->(x) WITH c, x AS b " + _OVERRIDES_OF,
)
UPSERT_FENCES = "UNWIND $rows AS row MERGE (f:Fence {uid: row.fuid}) SET f += row.props"
# Runtime edges (``patchstream trace``) are ``CALLS {via: RUNTIME}``: a new content of either
# end fences them out. Checked inside the write (the fence's ``traced`` mark), so a trace
# applied between a delta's fence read and its write is still dropped; an untraced file pays
# one index lookup.
RUNTIME = "<runtime>"
_TRACED = "UNWIND $fuids AS fuid MATCH (f:Fence {uid: fuid}) WHERE f.traced = true WITH f "
DROP_RUNTIME_EDGES = (
    _TRACED + "MATCH (s:Symbol {file_uid: f.uid})-[r:CALLS]->(:Symbol) WHERE r.via = $via DELETE r",
    _TRACED + "MATCH (:Symbol)-[r:CALLS]->(t:Symbol {file_uid: f.uid}) WHERE r.via = $via DELETE r",
)
# An overlay's registration (``stores.overlays``): a workspace's first write creates it.
UPSERT_OVERLAY = "MERGE (o:Overlay {uid: $uid}) ON CREATE SET o.created_at = $now SET o += $props"
DROP_ORPHAN_WANTS = (
    "UNWIND $keys AS key MATCH (w:Want {uid: key}) WHERE NOT (w)<-[:REFERS]-() DELETE w"
)


def delete_local(edge_type: str) -> str:
    # A call edge written before resolutions existed reads as exact (``planner.edge_resolution``).
    same = (
        "AND coalesce(r.resolution, 'exact') = row.resolution " if edge_type in CALL_TYPES else ""
    )
    return (
        f"UNWIND $rows AS row MATCH (s:Symbol {{uid: row.src}})-[r:{edge_type}]->"
        f"(t:Symbol {{uid: row.dst}}) WHERE r.via IS NULL {same}DELETE r"
    )


def add_local(edge_type: str) -> str:
    resolution = " {resolution: row.resolution}" if edge_type in CALL_TYPES else ""
    return (
        f"UNWIND $rows AS row MATCH (s:Symbol {{uid: row.src}}) "
        f"MATCH (t:Symbol {{uid: row.dst}}) MERGE (s)-[:{edge_type}{resolution}]->(t)"
    )


def delete_resolved(edge_type: str) -> str:
    return (
        f"UNWIND $rows AS row MATCH (s:Symbol {{uid: row.src}})-[r:{edge_type}]->(:Symbol) "
        f"WHERE r.via = row.dst DELETE r"
    )


# WITH splits the patterns so planners start from the indexed lookups instead of scanning
# every Symbol (FalkorDB otherwise plans a label scan: 250x slower at 10k symbols).
def resolve_out(edge_type: str) -> str:
    return (
        f"UNWIND $fuids AS fuid MATCH (s:Symbol {{file_uid: fuid}}) WITH s "
        f"MATCH (s)-[r:REFERS]->(w:Want) WHERE r.type = '{edge_type}' "
        f"WITH s, r, w MATCH (t:Symbol {{rkey: w.uid}}) WHERE t.uid <> s.uid "
        f"MERGE (s)-[e:{edge_type} {{via: r.dst}}]->(t) ON CREATE SET e.resolution = r.resolution"
    )


def resolve_in(edge_type: str) -> str:
    return (
        f"UNWIND $keys AS key MATCH (w:Want {{uid: key}})<-[r:REFERS]-(s:Symbol) "
        f"WHERE r.type = '{edge_type}' WITH s, r, key "
        f"MATCH (t:Symbol {{rkey: key}}) WHERE t.uid <> s.uid "
        f"MERGE (s)-[e:{edge_type} {{via: r.dst}}]->(t) ON CREATE SET e.resolution = r.resolution"
    )


def chunked(statements: Iterable[Statement]) -> Iterable[Statement]:
    """Split UNWIND lists so no statement carries more than a few hundred rows."""
    for query, params in statements:
        name = next((k for k in LIST_PARAMS if k in params), None)
        values = params.get(name) if name else None
        if name is None or not isinstance(values, list) or len(values) <= ROWS_PER_STATEMENT:
            yield query, params
            continue
        for start in range(0, len(values), ROWS_PER_STATEMENT):
            yield query, {**params, name: values[start : start + ROWS_PER_STATEMENT]}


# A ``WHERE n.tenant = ...`` next to a pattern makes FalkorDB start from a label scan of
# ``n`` (40x slower at 4k symbols); ``WITH`` after the indexed lookup pins the start.
# What a subclass defines of a name hides the base's member of it, except a Java field: it
# lives beside a method of its name (``Element.childNodes`` and ``Node.childNodes()``).
_OWN_MEMBER = "WHERE own.kind <> 'variable' OR own.language <> 'java' "
# ``Sub.m()`` where ``Sub`` (another file) inherits ``m`` from ``Base``: the reference wants
# ``<Sub's key>.m``, which no symbol has. Callers of ``Base.m`` include the symbols that
# want ``m`` through a subclass (up to three levels down) that does not define it.
#
# The subclasses are collected before anything reads their properties: FalkorDB otherwise
# planned the property filter into the variable-length traversal (273 ms over the 1,075
# subclasses of transformers' ``PreTrainedConfig``), and the ``own`` check runs only for a
# subclass whose method is referred to at all (48 -> 6 ms there; the same answers for all
# 12,542 methods of classes with subclasses in that corpus).
CALLERS_THROUGH_SUBCLASSES = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid})<-[:DEFINES]-(:Symbol)"
    "<-[:INHERITS_FROM*1..3]-(s:Symbol) "
    "WITH t, collect(DISTINCT s) AS subclasses UNWIND subclasses AS s "
    "WITH t, s WHERE s.rkey IS NOT NULL "
    "WITH t, s, s.rkey + '.' + t.name AS key MATCH (w:Want {uid: key}) "
    "OPTIONAL MATCH (s)-[:DEFINES]->(own:Symbol {name: t.name}) "
    + _OWN_MEMBER
    + "WITH t, w WHERE own IS NULL "
    "MATCH (w)<-[r:REFERS]-(n:Symbol) "
    "WHERE n.tenant = $tenant AND r.type IN ['CALLS', 'INSTANTIATES'] "
    "AND coalesce(r.resolution, 'exact') IN $allowed "
    "WITH n, collect(DISTINCT [t.uid, coalesce(r.resolution, 'exact')]) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)

# A call on an interface (``p.price()`` with ``p: Priced``) may run any implementation, an
# inferred caller of each: callers of ``Item.price`` include the callers of the ``price`` of
# every interface that ``Item`` implements or extends (up to three levels up).
CALLERS_THROUGH_INTERFACES = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WITH t "
    "MATCH (t)<-[:DEFINES]-(c:Symbol) WHERE c.kind IN ['class', 'interface'] WITH t, c "
    "MATCH (c)-[:INHERITS_FROM*1..3]->(i:Symbol) WHERE i.kind = 'interface' WITH t, i "
    "MATCH (i)-[:DEFINES]->(m:Symbol) WHERE m.name = t.name WITH t, m "
    "MATCH (m)<-[:CALLS]-(n:Symbol) WHERE n.tenant = $tenant "
    "WITH n, collect(DISTINCT [t.uid, 'inferred']) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)

# ``c.backing().get()`` where ``backing()`` (another file) is declared to return the interface
# ``Store``: the call wants ``<backing's key>().get``, joined to ``Store.get`` through the
# RETURNS edge (``CALLERS_THROUGH_RETURNS``); like a direct call of ``Store.get`` it is an
# inferred caller of each implementation. The producers are found as there: a reference to
# the interface's key (another file) or a plain edge (the same file).
_INTERFACE_METHOD = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WITH t "
    "MATCH (t)<-[:DEFINES]-(c:Symbol) WHERE c.kind IN ['class', 'interface'] WITH t, c "
    "MATCH (c)-[:INHERITS_FROM*1..3]->(i:Symbol) WHERE i.kind = 'interface' WITH t, i "
    "MATCH (i)-[:DEFINES]->(m:Symbol) WHERE m.name = t.name WITH t, i, m "
)
_WANTED_THROUGH_INTERFACE = (
    "WITH t, f.rkey + '().' + m.name AS key MATCH (w:Want {uid: key}) WITH t, w "
    "MATCH (w)<-[r:REFERS]-(n:Symbol) "
    "WHERE n.tenant = $tenant AND r.type IN ['CALLS', 'INSTANTIATES'] "
    "AND coalesce(r.resolution, 'exact') IN $allowed "
    "WITH n, collect(DISTINCT [t.uid, 'inferred']) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)
CALLERS_THROUGH_INTERFACE_RETURNS = (
    _INTERFACE_METHOD + "WITH t, m, i WHERE i.rkey IS NOT NULL "
    "MATCH (v:Want {uid: i.rkey}) WITH t, m, v "
    "MATCH (v)<-[q:REFERS]-(f:Symbol) WHERE q.type = 'RETURNS' AND f.rkey IS NOT NULL "
    + _WANTED_THROUGH_INTERFACE,
    _INTERFACE_METHOD
    + "MATCH (i)<-[q:RETURNS]-(f:Symbol) WHERE q.via IS NULL AND f.rkey IS NOT NULL "
    + _WANTED_THROUGH_INTERFACE,
)

# Go interfaces are structural: ``s.Put()`` with ``s Store`` may run the ``Put`` of every type
# of the branch whose methods include all of ``Store``'s. Callers of ``Memory.Put`` include
# the callers of ``Store.Put`` when ``Memory`` has every method ``Store`` declares.
CALLERS_THROUGH_GO_INTERFACES = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WHERE t.language = 'go' WITH t "
    "MATCH (t)<-[:DEFINES]-(c:Symbol) WITH t, c "
    "MATCH (m:Symbol {name: t.name}) WHERE m.scope = t.scope AND m.language = 'go' WITH t, c, m "
    "MATCH (i:Symbol {kind: 'interface'})-[:DEFINES]->(m) "
    "MATCH (i)-[:DEFINES]->(wanted:Symbol) WITH t, c, m, collect(DISTINCT wanted.name) AS needed "
    "MATCH (c)-[:DEFINES]->(own:Symbol) WITH t, m, needed, collect(DISTINCT own.name) AS has "
    "WITH t, m, [name IN needed WHERE NOT name IN has] AS missing WHERE size(missing) = 0 "
    "WITH t, m MATCH (m)<-[:CALLS]-(n:Symbol) WHERE n.tenant = $tenant "
    "WITH n, collect(DISTINCT [t.uid, 'inferred']) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)

# ``c = current(); c.find()`` with ``current`` in another file: the call wants the key
# ``<current's key>().find`` (``receiver_types``). Callers of ``Context.find`` include what
# wants that key for each function declared to return ``Context``: its RETURNS edge is a
# reference to Context's key (another file) or a plain edge (the same file). A method a
# later definition shadows (a typing overload) has no key and is not a target, as for any
# reference.
_RETURNED_METHOD = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WITH t WHERE t.rkey IS NOT NULL "
    "MATCH (t)<-[:DEFINES]-(c:Symbol) WHERE c.kind IN ['class', 'interface'] "
    "AND c.rkey IS NOT NULL WITH t, c "
)
# A C++ method defined outside its class's file (``Status VersionSet::LogAndApply`` in
# version_set.cc, the class in version_set.h): no DEFINES edge reaches it; its ``okey`` is
# its class's key (``keys.owner_key``).
_OWNED_METHOD = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WITH t "
    "WHERE t.rkey IS NOT NULL AND t.okey IS NOT NULL "
    "MATCH (c:Symbol {rkey: t.okey}) WHERE c.kind IN ['class', 'interface'] WITH t, c "
)


def _wanted_through(marker: str) -> str:
    return (
        f"WITH t, f.rkey + '{marker}.' + t.name AS key MATCH (w:Want {{uid: key}}) WITH t, w "
        "MATCH (w)<-[r:REFERS]-(n:Symbol) "
        "WHERE n.tenant = $tenant AND r.type IN ['CALLS', 'INSTANTIATES'] "
        "AND coalesce(r.resolution, 'exact') IN $allowed "
        "WITH n, collect(DISTINCT [t.uid, coalesce(r.resolution, 'exact')]) AS srcs "
        "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
    )


def _callers_through(edge: str, marker: str, returned: str = _RETURNED_METHOD) -> tuple[str, str]:
    """Callers of ``C.m`` through the functions whose ``edge`` names ``C``: a reference to C's
    key (C in another file) or a plain edge (the same file). Each Want is matched on its own
    (a WITH before its referrers): written as one pattern, FalkorDB started from every Symbol
    (5-8 s at level 2 of a scipy walk; 2-3 ms this way)."""
    wanted = _wanted_through(marker)
    return (
        returned + "WITH t, collect(DISTINCT c.rkey) AS ckeys UNWIND ckeys AS ckey "
        "MATCH (v:Want {uid: ckey}) WITH t, v "
        f"MATCH (v)<-[q:REFERS]-(f:Symbol) WHERE q.type = '{edge}' AND f.rkey IS NOT NULL "
        + wanted,
        returned
        + f"MATCH (c)<-[q:{edge}]-(f:Symbol) WHERE q.via IS NULL AND f.rkey IS NOT NULL "
        + wanted,
    )


def _callers_through_subclasses(edge: str, marker: str, wanted_at_all: str) -> tuple[str, str]:
    """The same joins for a method a subclass inherits (up to three levels down): ``f``'s
    ``edge`` names ``Sub``, which does not define ``m``, so ``<f's key>().m`` calls the base's
    ``m``. Only subclasses that some function's ``edge`` names are checked for their own.
    ``wanted_at_all`` keeps the methods such a call could reach before their subclasses are
    gathered: a method of sympy's ``Basic`` has thousands within three levels, and each
    level-2 read of a context's walk spent ~150 ms on them to find nothing."""
    subclasses = (
        "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WHERE t.rkey IS NOT NULL "
        + wanted_at_all
        + "MATCH (t)<-[:DEFINES]-(:Symbol)"
        "<-[:INHERITS_FROM*1..3]-(s:Symbol) WITH t, collect(DISTINCT s) AS subclasses "
        "UNWIND subclasses AS s WITH t, s WHERE s.rkey IS NOT NULL "
    )
    not_own = (
        "OPTIONAL MATCH (s)-[:DEFINES]->(own:Symbol {name: t.name}) "
        + _OWN_MEMBER
        + "WITH t, f, own WHERE own IS NULL "
    )
    wanted = _wanted_through(marker)
    return (
        subclasses + "WITH t, s, s.rkey AS skey MATCH (v:Want {uid: skey}) WITH t, s, v "
        f"MATCH (v)<-[q:REFERS]-(f:Symbol) WHERE q.type = '{edge}' AND f.rkey IS NOT NULL "
        + not_own
        + wanted,
        subclasses
        + f"MATCH (s)<-[q:{edge}]-(f:Symbol) WHERE q.via IS NULL AND f.rkey IS NOT NULL "
        + not_own
        + wanted,
    )


# A graph written before ``rtail`` existed gets it once, when its index is first created.
BACKFILL_RTAILS = (
    "MATCH (w:Want) WHERE w.tail IS NOT NULL AND w.rtail IS NULL "
    "WITH w, split(w.tail, '|') AS parts WITH w, parts[size(parts) - 1] AS m "
    "WHERE w.uid ENDS WITH ('().' + m) SET w.rtail = w.tail"
)


def _callers_on_returned_subclasses() -> tuple[str, str]:
    """``_callers_through_subclasses`` for RETURNS, read from the calls instead: each
    ``<f's key>().m`` call of the method's name in the scope (a Want whose ``rtail`` is
    ``scope|m``, ``MARK_TAILS``), its ``f``, the class ``f`` returns, and whether that class
    inherits ``m`` from the method's class. A method of sympy's ``Basic`` has thousands of
    subclasses within three levels: gathering them cost ~0.1 s a level-2 read of a context's
    walk; the calls of a name on a function's result are few."""
    calls = (
        "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WHERE t.rkey IS NOT NULL "
        "WITH t, t.scope + '|' + t.name AS tail MATCH (w:Want {rtail: tail}) "
        "WITH t, w, left(w.uid, size(w.uid) - size(t.name) - 3) AS fkey "
        "MATCH (f:Symbol {rkey: fkey}) WITH t, w, f "
    )
    inherited = (
        "WITH t, w, s MATCH (t)<-[:DEFINES]-(c:Symbol) WITH t, w, s, c "
        "MATCH (s)-[:INHERITS_FROM*1..3]->(c) WITH DISTINCT t, w, s "
        "OPTIONAL MATCH (s)-[:DEFINES]->(own:Symbol {name: t.name}) "
        + _OWN_MEMBER
        + "WITH t, w, own WHERE own IS NULL "
        "MATCH (w)<-[r:REFERS]-(n:Symbol) "
        "WHERE n.tenant = $tenant AND r.type IN ['CALLS', 'INSTANTIATES'] "
        "AND coalesce(r.resolution, 'exact') IN $allowed "
        "WITH n, collect(DISTINCT [t.uid, coalesce(r.resolution, 'exact')]) AS srcs "
        "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
    )
    return (
        calls + "MATCH (f)-[q:REFERS]->(v:Want) WHERE q.type = 'RETURNS' WITH t, w, v "
        "MATCH (s:Symbol {rkey: v.uid}) " + inherited,
        calls + "MATCH (f)-[q:RETURNS]->(s:Symbol) WHERE q.via IS NULL " + inherited,
    )


CALLERS_THROUGH_RETURNS = (
    *_callers_through("RETURNS", "()"),
    *_callers_through("RETURNS", "()", _OWNED_METHOD),
    *_callers_on_returned_subclasses(),
    CALLERS_THROUGH_TWO_RETURNS,
)
# ``operate((source, subscriber) => source.subscribe())`` wants ``<operate's key>(*).subscribe``
# (``receiver_types._callback_member``); operate's CALLBACK_PARAM edges name the classes its
# callbacks' parameters declare. The call site's reference is ``inferred`` already.
CALLERS_THROUGH_CALLBACKS = (
    *_callers_through("CALLBACK_PARAM", "(*)"),
    # Only TypeScript writes CALLBACK_PARAM edges (``receiver_joins``); its classes may be
    # JavaScript's.
    *_callers_through_subclasses(
        "CALLBACK_PARAM", "(*)", "AND t.language IN ['typescript', 'tsx', 'javascript'] WITH t "
    ),
)

# Name-only (asked for explicitly): ``recv.m()`` that no type resolves counts as a call of
# ``m`` when the branch has exactly one function named ``m`` and it is a method. The
# reference's ``Want`` carries ``tail = scope|m`` (``planner.name_only_tail``).
_UNIQUE_METHOD = (
    "MATCH (t)<-[:DEFINES]-(c:Symbol) WHERE c.kind IN ['class', 'interface'] WITH {keep}t "
    "MATCH (o:Symbol {{name: t.name}}) WITH {keep}t, o "
    "WHERE o.scope = t.scope AND o.kind = 'function' "
    "WITH {keep}t, count(o) AS same WHERE same = 1 "
)
CALLERS_BY_NAME_ONLY = (
    "UNWIND $frontier AS uid MATCH (t:Symbol {uid: uid}) WITH t WHERE t.kind = 'function' "
    + _UNIQUE_METHOD.format(keep="")
    + "WITH t, t.scope + '|' + t.name AS tail MATCH (w:Want {tail: tail}) WITH t, w "
    "MATCH (w)<-[r:REFERS]-(n:Symbol) WHERE n.tenant = $tenant AND r.type = 'CALLS' "
    "WITH n, collect(DISTINCT [t.uid, 'name-only']) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)
CALLEES_BY_NAME_ONLY = (
    "UNWIND $frontier AS uid MATCH (s:Symbol {uid: uid}) WITH s "
    "MATCH (s)-[r:REFERS]->(w:Want) WHERE r.type = 'CALLS' AND w.tail IS NOT NULL "
    "WITH s, substring(w.tail, size(s.scope) + 1) AS name "
    "MATCH (t:Symbol {name: name}) WITH s, t "
    "WHERE t.scope = s.scope AND t.kind = 'function' AND t.tenant = $tenant "
    + _UNIQUE_METHOD.format(keep="s, ")
    + "WITH t AS n, collect(DISTINCT [s.uid, 'name-only']) AS srcs "
    "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
)


def walk_level(types: str, inbound: bool, inherited: bool, weakest: CallResolution) -> str:
    """One level of a plain walk for a whole frontier: each found node once, with the
    ``[from uid, resolution]`` pairs that reached it; edges weaker than ``weakest`` are not
    followed (``$allowed``: ``CallResolution.at_least(weakest)``)."""
    step = f"(t)<-[r:{types}]-(n:Symbol)" if inbound else f"(t)-[r:{types}]->(n:Symbol)"
    res = "coalesce(r.resolution, 'exact')"
    parts = [
        f"UNWIND $frontier AS uid MATCH (t:Symbol {{uid: uid}}) WITH t MATCH {step} "
        f"WHERE n.tenant = $tenant AND {res} IN $allowed "
        f"WITH n, collect(DISTINCT [t.uid, {res}]) AS srcs "
        "RETURN srcs, n.uid AS uid, properties(n) AS props LIMIT $cap"
    ]
    if inherited:  # the walks through inheritance and return types, in the same round trip
        parts += [CALLERS_THROUGH_SUBCLASSES, *CALLERS_THROUGH_RETURNS]
        if weakest.rank >= CallResolution.INFERRED.rank:
            parts += [CALLERS_THROUGH_INTERFACES, CALLERS_THROUGH_GO_INTERFACES,
                      *CALLERS_THROUGH_INTERFACE_RETURNS, *CALLERS_THROUGH_CALLBACKS]  # fmt: skip
    if weakest is CallResolution.NAME_ONLY and "CALLS" in types.split("|"):
        parts.append(CALLERS_BY_NAME_ONLY if inbound else CALLEES_BY_NAME_ONLY)
    return " UNION ALL ".join(parts)
