"""The agent state store on the graph database (FalkorDB or Memgraph), beside the code graph.

Why the graph store and not an embedded database: every service of a deployment already
reaches it, it is the one store with transactions (a FalkorDB query runs alone in its graph;
a Memgraph query is a transaction), and a tenant's runs then live, are backed up and are
dropped with the tenant's code. Compare-and-set is one query: ``MATCH ... WHERE version =
$expected SET ...`` writes the snapshot and CREATEs its events, or matches nothing.

Model: ``(:Run|Session {uid, tenant, id, version, doc, <indexed fields>})`` and
``(:RunEvent {uid, tenant, run_uid, seq, doc, published})``.
"""

from __future__ import annotations

from typing import Any

from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.state.base import DocKind, NewEvent, StoredDoc

_KINDS: tuple[DocKind, ...] = ("Run", "Session", "Memory", "MemoryDecision")
_FIELDS = frozenset(
    {
        "status",
        "session_id",
        "repo",
        "expires_at",
        "updated_at",
        "scope",
        "owner",
        "subject",
        "key",
        "state",
        "source_ref",
        "memory_id",
    }
)
_CREATE_EVENTS = (
    "WITH n UNWIND $events AS e "
    "CREATE (:RunEvent {uid: $uid + '#' + toString(e.seq), tenant: $tenant, run_uid: $uid, "
    "seq: e.seq, doc: e.doc, published: false}) RETURN count(*)"
)


def _label(kind: DocKind) -> str:
    if kind not in _KINDS:  # the label is spliced into the query: a fixed set only
        raise ValueError(f"unknown document kind {kind!r}")
    return kind


def _uid(tenant: str, kind: DocKind, doc_id: str) -> str:
    return f"{tenant}|{kind.lower()}|{doc_id}"


def _fields(fields: dict[str, object]) -> dict[str, object]:
    unknown = set(fields) - _FIELDS
    if unknown:
        raise ValueError(f"not indexed fields: {sorted(unknown)}")
    return fields


class CypherAgentStateStore:
    def __init__(self, graph: CypherGraphStore) -> None:
        self.graph = graph

    def get(self, tenant: str, kind: DocKind, doc_id: str) -> StoredDoc | None:
        rows = self.graph.execute(
            tenant,
            f"MATCH (n:{_label(kind)} {{uid: $uid}}) RETURN n.id, n.version, n.doc",
            {"uid": _uid(tenant, kind, doc_id)},
        )
        return StoredDoc(rows[0][0], int(rows[0][1]), rows[0][2]) if rows else None

    def create(
        self,
        tenant: str,
        kind: DocKind,
        doc_id: str,
        doc: StoredDoc,
        fields: dict[str, object],
        events: list[NewEvent],
    ) -> bool:
        label = _label(kind)
        query = (
            # Not ``WITH old WHERE old IS NULL``: FalkorDB passes that row on (checked).
            f"OPTIONAL MATCH (old:{label} {{uid: $uid}}) WITH count(old) AS held WHERE held = 0 "
            f"CREATE (n:{label} {{uid: $uid, tenant: $tenant, id: $id, version: $version, "
            "doc: $doc}) SET n += $fields "
        )
        return self._written(tenant, kind, doc_id, query, doc, fields, events, {})

    def replace(
        self,
        tenant: str,
        kind: DocKind,
        doc_id: str,
        expected: int,
        doc: StoredDoc,
        fields: dict[str, object],
        events: list[NewEvent],
    ) -> bool:
        query = (
            f"MATCH (n:{_label(kind)} {{uid: $uid}}) WHERE n.version = $expected "
            "SET n.version = $version, n.doc = $doc SET n += $fields "
        )
        return self._written(
            tenant, kind, doc_id, query, doc, fields, events, {"expected": int(expected)}
        )

    def _written(
        self,
        tenant: str,
        kind: DocKind,
        doc_id: str,
        query: str,
        doc: StoredDoc,
        fields: dict[str, object],
        events: list[NewEvent],
        extra: dict[str, Any],
    ) -> bool:
        params: dict[str, Any] = {
            "uid": _uid(tenant, kind, doc_id),
            "tenant": tenant,
            "id": doc_id,
            "version": doc.version,
            "doc": doc.doc,
            "fields": _fields(fields),
            "events": [{"seq": e.seq, "doc": e.doc} for e in events],
            **extra,
        }
        # UNWIND over no events yields no rows: without events, return the node itself.
        tail = _CREATE_EVENTS if events else "RETURN count(n)"
        rows = self.graph.execute(tenant, query + tail, params)
        return bool(rows) and int(rows[0][0]) > 0

    def find(
        self, tenant: str, kind: DocKind, equals: dict[str, str], limit: int
    ) -> list[StoredDoc]:
        where = " AND ".join(f"n.{name} = ${name}" for name in _fields(dict(equals)))
        rows = self.graph.execute(
            tenant,
            f"MATCH (n:{_label(kind)}) WHERE n.tenant = $tenant "
            + (f"AND {where} " if where else "")
            + "RETURN n.id, n.version, n.doc ORDER BY n.updated_at DESC LIMIT $limit",
            {"tenant": tenant, "limit": int(limit), **equals},
        )
        return [StoredDoc(r[0], int(r[1]), r[2]) for r in rows]

    def events(self, tenant: str, run_id: str, after_seq: int, limit: int) -> list[str]:
        rows = self.graph.execute(
            tenant,
            "MATCH (e:RunEvent {run_uid: $uid}) WHERE e.seq > $after "
            "RETURN e.doc ORDER BY e.seq LIMIT $limit",
            {"uid": _uid(tenant, "Run", run_id), "after": int(after_seq), "limit": int(limit)},
        )
        return [r[0] for r in rows]

    def unpublished(self, tenant: str, limit: int) -> list[tuple[str, str]]:
        rows = self.graph.execute(
            tenant,
            "MATCH (e:RunEvent) WHERE e.tenant = $tenant AND e.published = false "
            "RETURN e.uid, e.doc ORDER BY e.run_uid, e.seq LIMIT $limit",
            {"tenant": tenant, "limit": int(limit)},
        )
        return [(r[0], r[1]) for r in rows]

    def mark_published(self, tenant: str, uids: list[str]) -> None:
        if uids:
            self.graph.execute(
                tenant,
                "UNWIND $uids AS uid MATCH (e:RunEvent {uid: uid}) WHERE e.tenant = $tenant "
                "SET e.published = true",
                {"uids": uids, "tenant": tenant},
            )

    def delete(self, tenant: str, kind: DocKind, doc_ids: list[str]) -> int:
        if not doc_ids:
            return 0
        uids = [_uid(tenant, kind, d) for d in doc_ids]
        if kind == "Run":
            self.graph.execute(
                tenant,
                "UNWIND $uids AS uid MATCH (e:RunEvent {run_uid: uid}) DELETE e",
                {"uids": uids},
            )
        rows = self.graph.execute(
            tenant,
            f"UNWIND $uids AS uid MATCH (n:{_label(kind)} {{uid: uid}}) DETACH DELETE n "
            "RETURN count(*)",
            {"uids": uids},
        )
        return int(rows[0][0]) if rows else 0

    def expired(self, tenant: str, kind: DocKind, now: float, limit: int) -> list[str]:
        rows = self.graph.execute(
            tenant,
            f"MATCH (n:{_label(kind)}) WHERE n.tenant = $tenant AND n.expires_at < $now "
            "RETURN n.id LIMIT $limit",
            {"tenant": tenant, "now": float(now), "limit": int(limit)},
        )
        return [r[0] for r in rows]
