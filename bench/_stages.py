"""Where a search and a context request spend their time, stage by stage, measured in the
bench's own process on the same stores the query service reads (``bench/query.py``)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from patchstream.config.settings import Settings
from patchstream.query import service as service_module
from patchstream.query.service import QueryService
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.stores.vector import search_index
from patchstream.stores.vector.file_ranker import shipped_ranker
from patchstream.stores.vector.search_mirror import SearchMirror
from pipeline import percentile


def _wrap(owner: Any, name: str, into: list[float]) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into.append((time.perf_counter() - started) * 1000)

    setattr(owner, name, timed)


def stage_profile(settings: Settings, tenant: str, queries: list[str], requests: int) -> str:
    """p50 ms per stage of search (the copy's) and of context 8k; the Milvus path's hybrid
    search and the overlap of its top 10 with the copy's, in the same run."""
    graph, vectors = open_graph_store(settings), open_vector_store(settings)
    ranker = (
        shipped_ranker(settings.embedding_settings().kind)
        if settings.query.learned_file_ranking
        else None
    )  # as the query service does
    mirror = SearchMirror(vectors, lag_s=3600, ranker=ranker)
    service = QueryService(settings, graph, vectors)
    service.mirror = mirror
    mirror.warm(tenant)
    while mirror.state(tenant).startswith("loading"):
        time.sleep(0.2)
    index = mirror._mirrors[tenant].index
    stages: dict[str, list[float]] = {k: [] for k in (
        "embed query", "filter mask", "dense", "term postings", "bm25", "file ranks", "fusion",
        "learned order", "winners' rows",
        "milvus hybrid",
        "context: search", "context: graph walks", "context: trust", "context: assemble",
        "context total")}  # fmt: skip
    _wrap(vectors.embedder, "embed", stages["embed query"])
    _wrap(index, "mask", stages["filter mask"])
    _wrap(index, "_dense_scores", stages["dense"])
    _wrap(search_index, "learned_order", stages["learned order"])
    _wrap(index, "_matches", stages["term postings"])
    _wrap(index, "_row_bm25", stages["bm25"])
    _wrap(index, "_file_bm25", stages["file ranks"])
    _wrap(mirror, "_hits", stages["winners' rows"])
    overlap: list[float] = []
    rng = random.Random(5)
    for _ in range(requests):
        query = rng.choice(queries)
        inner_stages = ("embed query", "filter mask", "dense", "term postings", "bm25",
                        "file ranks", "learned order", "winners' rows")  # fmt: skip
        before = {k: len(stages[k]) for k in inner_stages}
        started = time.perf_counter()
        mine = mirror.search(tenant, query, limit=10) or []
        added = {k: stages[k][before[k] :] for k in inner_stages}
        inner = sum(sum(values) for values in added.values())
        if added["learned order"]:  # its title's BM25 ran inside it: counted there alone
            inner -= added["term postings"][-1] + added["file ranks"][-1]
        stages["fusion"].append((time.perf_counter() - started) * 1000 - inner)
        started = time.perf_counter()
        theirs = vectors.search(tenant, query, limit=10)
        stages["milvus hybrid"].append((time.perf_counter() - started) * 1000)
        if theirs:
            overlap.append(len({h.chunk_id for h in mine} & {h.chunk_id for h in theirs})
                           / len(theirs))  # fmt: skip
    _wrap(service, "search", stages["context: search"])
    _wrap(graph, "walks", stages["context: graph walks"])
    _wrap(service, "_with_trust", stages["context: trust"])
    _wrap(service_module, "assemble", stages["context: assemble"])
    for _ in range(requests):
        started = time.perf_counter()
        service.context(tenant, rng.choice(queries), 8000, None, None)
        stages["context total"].append((time.perf_counter() - started) * 1000)
    mirror.close()
    graph.close()
    vectors.close()
    parts = [f"{name} {percentile(values, 50):.1f}" for name, values in stages.items() if values]
    return (
        f"{'; '.join(parts)} (graph walks: callers and callees of the 5 entry points, one "
        "multi-start walk per direction, the two side by side); top-10 overlap "
        f"of the copy with the Milvus path {sum(overlap) / max(1, len(overlap)):.2f}"
    )
