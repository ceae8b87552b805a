"""The query service's amplification bounds, with in-memory stand-ins for the stores: the
freshness cache stays bounded, and a fan-out graph cannot feed the assembler thousands of
candidates."""

from __future__ import annotations

from typing import Any

import pytest

from patchstream.config.settings import QuerySettings, Settings
from patchstream.errors import StoreUnavailable
from patchstream.query.freshness import FRESHNESS_ENTRIES
from patchstream.query.service import QueryService
from patchstream.stores.graph.base import Neighbor, RepoVersion, StoredSymbol
from patchstream.stores.vector.milvus_rows import SearchHit


def _symbol(i: int) -> StoredSymbol:
    return StoredSymbol(id=f"r::m.py::caller{i}", kind="function", name=f"caller{i}",
                        qualified_name=f"caller{i}", repo="r", ref="main", path="m.py",
                        start_line=i, end_line=i, signature=f"def caller{i}(): ...")  # fmt: skip


class FanOutGraph:
    """Every symbol has 3,000 callers."""

    def callers(self, *args: Any) -> list[Neighbor]:
        return [Neighbor(_symbol(i), 1) for i in range(3000)]

    callees = callers
    impact = callers

    def flagged_files(self, *args: Any) -> list[Any]:
        return []

    def history(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []  # no commits indexed

    def histories(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}

    limits: list[int | None]

    def walks(
        self, tenant: str, kind: str, ids: list[str], *args: Any, limit: int | None = None
    ) -> dict[str, Any]:
        self.limits = [*getattr(self, "limits", []), limit]
        return {sid: self.callers()[:limit] for sid in ids}

    def repo_version(self, tenant: str, repo: str, ref: str) -> RepoVersion:
        return RepoVersion(1, 1, None)

    def overlay_chain(self, tenant: str, repo: str, ref: str) -> list[str]:
        return [ref]  # no overlays here

    def view(self, tenant: str, repo: str, ref: str) -> None:
        return None

    def file_sources(self, tenant: str, files: list[Any]) -> dict[Any, str]:
        self.sources_asked = len(files)
        return {}

    def session_files(self, *args: Any) -> list[Any]:
        return []


class OneHitVectors:
    def search(self, *args: Any, **kwargs: Any) -> list[SearchHit]:
        return [SearchHit(1.0, "c", "r::m.py::target", "r", "main", "m.py", "function", "code",
                          1, 2, "h", 1, "def target():\n    return 1\n")]  # fmt: skip

    def last_applied(self, tenant: str, repo: str) -> tuple[int, float | None]:
        return 0, None


def _service(**query: Any) -> QueryService:
    settings = Settings(query=QuerySettings(**query))
    return QueryService(settings, FanOutGraph(), OneHitVectors())  # type: ignore[arg-type]


def test_a_fan_out_graph_gives_the_assembler_at_most_the_candidate_cap() -> None:
    service = _service(max_context_candidates=50, context_walk_rows=5000)
    result = service.context("acme", "target", budget=100_000)
    assert result.blocks  # the answer is still assembled
    # 6,000 neighbour signatures were offered; at most 50 candidates went on.
    assert sum(len(b.symbol_ids) for b in result.blocks) <= 50


def test_context_asks_the_graph_for_the_walk_rows_it_can_use() -> None:
    service = _service(context_walk_rows=7)
    result = service.context("acme", "target", budget=100_000)
    assert service.graph.limits == [7, 7]  # type: ignore[attr-defined]
    signatures = [b for b in result.blocks if b.kind.endswith("-signature")]
    assert 0 < len(signatures) <= 14


def test_the_freshness_cache_is_bounded() -> None:
    service = _service()
    for i in range(FRESHNESS_ENTRIES + 500):
        service.freshness("acme", f"repo{i}")
        service.fresh.vector_tier("acme", f"repo{i}")
    assert len(service.fresh._cache) <= FRESHNESS_ENTRIES


class DownGraph:
    """A graph store being restarted: every read fails."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("FalkorDB read: not answering")

        return fail


class StampedVectors(OneHitVectors):
    def last_applied(self, tenant: str, repo: str) -> tuple[int, float | None]:
        return 7, 1234.5


def test_a_search_answers_how_fresh_its_tier_is_while_the_graph_store_is_down() -> None:
    settings = Settings(query=QuerySettings())
    service = QueryService(settings, DownGraph(), StampedVectors())  # type: ignore[arg-type]
    tiers = service.fresh.vector_tier("acme", "billing", "main")
    assert tiers["vector"] == {"files": 7, "last_applied_at": 1234.5, "oldest_owed_at": None,
                               "search": "milvus"}  # fmt: skip
    assert "graph" not in tiers
    with pytest.raises(StoreUnavailable):  # both tiers need the graph store
        service.freshness("acme", "billing", "main")
