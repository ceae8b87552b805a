"""Open the configured stores."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchstream.config.settings import Settings
from patchstream.stores.graph.cypher import CypherGraphStore

if TYPE_CHECKING:  # pymilvus is imported where a vector store is opened: see stores.vector
    from patchstream.stores.vector.milvus import MilvusVectorStore


def open_graph_store(settings: Settings) -> CypherGraphStore:
    graph = settings.graph
    if graph.backend == "memgraph":
        from patchstream.stores.graph.memgraph import MemgraphGraphStore

        store: CypherGraphStore = MemgraphGraphStore(
            host=graph.memgraph_host,
            port=graph.memgraph_port,
            username=graph.memgraph_username,
            password=graph.memgraph_password.get_secret_value(),
        )
    else:
        from patchstream.stores.graph.falkordb import FalkorGraphStore

        password = (
            graph.falkordb_password.get_secret_value()
            if graph.falkordb_password
            else embedded_falkordb_password(settings)
        )
        store = FalkorGraphStore(
            host=graph.falkordb_host,
            port=graph.falkordb_port,
            password=password,
            graph_prefix=graph.graph_prefix,
        )
    store.max_walk_rows = settings.query.max_walk_rows
    store.ensure_schema()
    return store


def embedded_falkordb_password(settings: Settings) -> str | None:
    """The password ``patchstream up`` generated, for clients of the embedded FalkorDB."""
    path = Path(settings.embedded.data_dir) / "falkordb" / "password"
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def milvus_uri(settings: Settings) -> str:
    """The configured Milvus, or else the embedded stack's: a terminal beside ``up`` reaches
    its Milvus with no setting, as it reaches its FalkorDB (``embedded_falkordb_password``)."""
    from patchstream.config.stack_addresses import embedded_milvus_uri

    return settings.vector.milvus_uri or embedded_milvus_uri(settings.embedded)


def open_vector_store(settings: Settings) -> MilvusVectorStore:
    from patchstream.embedders.factory import create_embedder
    from patchstream.stores.vector.milvus import MilvusVectorStore

    vector = settings.vector
    store = MilvusVectorStore(
        milvus_uri(settings),
        create_embedder(settings.embedding_settings()),
        collection_prefix=vector.collection_prefix,
        token=vector.milvus_token.get_secret_value() if vector.milvus_token else None,
        timeout_s=vector.timeout_s,
    )
    store.ensure_schema()
    return store
