"""Real services for integration tests: FalkorDB and Milvus Lite, started once per session.

A service that cannot start fails the run; nothing is skipped silently. The only optional
backend is Memgraph, which cannot be installed here: its contract tests run when
``PATCHSTREAM_TEST_MEMGRAPH_URL`` (``bolt://host:port``) is set, as in the compose stack.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from urllib.parse import urlparse

import pytest

from patchstream.embedded.services import (
    Service,
    ServiceError,
    free_port,
    start_falkordb,
    start_milvus_lite,
    start_tansu,
)
from patchstream.embedders.hashing import HashingEmbedder
from patchstream.errors import ConfigError
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.stores.vector.milvus import MilvusVectorStore


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting what it is asked to embed."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.name = f"counting-{dim}"
        self.texts_embedded = 0
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts_embedded += len(texts)
        return super().embed(texts)


def _on_a_free_port(start: Callable[..., Service], data_dir: Path) -> Service:
    """The suite runs in several processes: another may take the port ``free_port`` chose
    before this service binds it. A taken port fails the start; it is tried on another."""
    for attempt in range(3):
        try:
            return start(data_dir / f"try{attempt}", free_port(), port_wait_s=0.5)
        except (ServiceError, ConfigError):
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def falkordb_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    service = _on_a_free_port(start_falkordb, tmp_path_factory.mktemp("falkordb"))
    yield service
    service.stop()


@pytest.fixture(scope="session")
def tansu_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    service = _on_a_free_port(start_tansu, tmp_path_factory.mktemp("tansu"))
    yield service
    service.stop()


@pytest.fixture(scope="session")
def milvus_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    service = _on_a_free_port(start_milvus_lite, tmp_path_factory.mktemp("milvus"))
    yield service
    service.stop()


def _memgraph_store() -> CypherGraphStore:
    from patchstream.stores.graph.memgraph import MemgraphGraphStore

    url = urlparse(os.environ["PATCHSTREAM_TEST_MEMGRAPH_URL"])
    store = MemgraphGraphStore(host=url.hostname or "127.0.0.1", port=url.port or 7687)
    store.ensure_schema()
    return store


@pytest.fixture(
    scope="session",
    params=[
        "falkordb",
        pytest.param(
            "memgraph",
            marks=pytest.mark.skipif(
                "PATCHSTREAM_TEST_MEMGRAPH_URL" not in os.environ,
                reason="Memgraph cannot run here; set PATCHSTREAM_TEST_MEMGRAPH_URL (compose)",
            ),
        ),
    ],
)
def graph_backend(request: pytest.FixtureRequest) -> Iterator[CypherGraphStore]:
    if request.param == "falkordb":
        service: Service = request.getfixturevalue("falkordb_service")
        store: CypherGraphStore = FalkorGraphStore(port=service.port)
    else:
        store = _memgraph_store()
    store.ensure_schema()
    yield store
    store.close()


@pytest.fixture
def tenant() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def graph(graph_backend: CypherGraphStore, tenant: str) -> Iterator[CypherGraphStore]:
    yield graph_backend
    drop = getattr(graph_backend, "drop_tenant", None)
    if drop is not None:
        drop(tenant)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def vectors(milvus_service: Service, embedder: CountingEmbedder) -> Iterator[MilvusVectorStore]:
    store = MilvusVectorStore(
        f"http://127.0.0.1:{milvus_service.port}",
        embedder,
        collection_prefix=f"test_{uuid.uuid4().hex[:8]}_",
    )
    store.ensure_schema()
    yield store
    store.drop()
    store.close()


FIXTURE_ROOT = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty git repository on branch main."""
    from tests.integration.history_repo import git

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo
