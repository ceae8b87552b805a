"""Memgraph adapter through gqlalchemy (extra ``[memgraph]``), sharing all Cypher.

Memgraph holds every tenant in one database; tenant isolation comes from the tenant in
every uid and the ``tenant`` predicate in every read. Writes of one file run in one
explicit transaction on gqlalchemy's underlying mgclient connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from patchstream.errors import ConfigError, StoreError
from patchstream.stores.graph.cypher import INDEXES, CypherGraphStore, Statement
from patchstream.stores.graph.statements import BACKFILL_RTAILS

try:  # the extra is optional: the embedded stack uses FalkorDB
    import mgclient
    from gqlalchemy import Memgraph
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ConfigError(
        "the Memgraph adapter needs gqlalchemy: pip install 'patchstream[memgraph]'"
    ) from exc


class MemgraphGraphStore(CypherGraphStore):
    """Graph store on Memgraph (Bolt)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 7687,
        username: str = "",
        password: str = "",
    ) -> None:
        self.memgraph = Memgraph(host=host, port=port, username=username, password=password)
        self._connection = mgclient.connect(
            host=host, port=port, username=username, password=password
        )
        self._connection.autocommit = False

    def ensure_schema(self) -> None:
        for label, prop in INDEXES:
            self.memgraph.execute(f"CREATE INDEX ON :{label}({prop});")
        self.memgraph.execute(BACKFILL_RTAILS)  # a graph of before ``rtail``: once, then a no-op

    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        try:
            return [list(row.values()) for row in self.memgraph.execute_and_fetch(query, params)]
        except Exception as exc:  # gqlalchemy surfaces driver errors untyped
            raise StoreError(f"Memgraph read failed: {exc}") from exc

    def _write(self, tenant: str, statements: Sequence[Statement]) -> None:
        cursor = self._connection.cursor()
        try:
            for query, params in statements:
                cursor.execute(query, params)
                cursor.fetchall()
            self._connection.commit()
        except Exception as exc:
            self._connection.rollback()
            raise StoreError(f"Memgraph write failed and was rolled back: {exc}") from exc

    def execute(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        cursor = self._connection.cursor()
        try:
            cursor.execute(query, params)
            rows = [list(row) for row in cursor.fetchall()]
            self._connection.commit()
        except Exception as exc:  # a serialization conflict included: the caller retries
            self._connection.rollback()
            raise StoreError(f"Memgraph query failed and was rolled back: {exc}") from exc
        return rows

    def drop_tenant(self, tenant: str) -> None:
        self.memgraph.execute(
            "MATCH (n) WHERE n.tenant = $tenant OR n.uid STARTS WITH $prefix DETACH DELETE n",
            {"tenant": tenant, "prefix": f"{tenant}|"},
        )

    def close(self) -> None:
        self._connection.close()
