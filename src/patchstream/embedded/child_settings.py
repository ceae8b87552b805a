"""What the embedded stack's children are told: the services' addresses, and each child's
settings sections (only those it needs: a secret reaches only the children that use it)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import SecretStr

from patchstream.config.settings import Settings
from patchstream.config.stack_addresses import BACKING_HOST, embedded_milvus_uri
from patchstream.embedded.services import falkordb_password

# What each child may read. Sections with secrets (graph, vector, embedding, query, gateway)
# go only to the children that use them: the OpenAI key never reaches the gateway.
_COMMON = ("parsing", "kafka", "pipeline", "embedded", "metrics")
CHILD_SECTIONS: dict[str, tuple[str, ...]] = {
    "parse": (*_COMMON, "graph"),
    "graph-sink": (*_COMMON, "graph"),
    "vector-sink": (*_COMMON, "vector", "embedding", "embedder"),
    "query": (*_COMMON, "graph", "vector", "embedding", "embedder", "query", "memory"),
    "gateway": (*_COMMON, "gateway"),
    "reconcile": (*_COMMON, "graph", "vector", "embedding", "embedder"),
}


def with_embedded_addresses(settings: Settings) -> Settings:
    """The settings clients need to reach the embedded services."""
    embedded = settings.embedded
    host = embedded.host
    password = falkordb_password(Path(embedded.data_dir).resolve() / "falkordb")
    return settings.model_copy(
        update={
            "kafka": settings.kafka.model_copy(
                update={"bootstrap": f"{BACKING_HOST}:{embedded.kafka_port}"}
            ),
            "graph": settings.graph.model_copy(
                update={
                    "falkordb_host": BACKING_HOST,
                    "falkordb_port": embedded.falkordb_port,
                    "falkordb_password": SecretStr(password),
                }
            ),
            "vector": settings.vector.model_copy(
                update={"milvus_uri": embedded_milvus_uri(settings.embedded)}
            ),
            "query": settings.query.model_copy(
                update={
                    "host": host,
                    "url": f"http://{host}:{settings.query.port}",
                    "gateway_upstream": f"http://{host}:{settings.gateway.port}",
                }
            ),
            "gateway": settings.gateway.model_copy(
                update={"host": host, "url": f"http://{host}:{settings.gateway.port}"}
            ),
            # The gateway's mirrors are where the parse stage reads blobs.
            "pipeline": settings.pipeline.model_copy(
                update={
                    "repos_dir": settings.pipeline.repos_dir
                    or str(Path(embedded.data_dir).resolve() / "mirrors")
                }
            ),
        }
    )


def settings_environment(settings: Settings) -> dict[str, str]:
    """Every section as ``PATCHSTREAM_<SECTION>`` JSON, secrets included, for child processes
    (``child_environment`` then keeps what each child may read)."""

    def reveal(value: object) -> object:
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        raise TypeError(f"cannot serialize {type(value).__name__}")

    env = {}
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        key = f"PATCHSTREAM_{name.upper()}"
        env[key] = value if isinstance(value, str) else json.dumps(value, default=reveal)
    return env


def child_environment(env: dict[str, str], service: str) -> dict[str, str]:
    """``env`` with only the settings sections ``service`` needs (CHILD_SECTIONS)."""
    allowed = {f"PATCHSTREAM_{section.upper()}" for section in CHILD_SECTIONS[service]}
    return {k: v for k, v in env.items() if not k.startswith("PATCHSTREAM_") or k in allowed}
