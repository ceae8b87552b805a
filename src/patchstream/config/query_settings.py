"""The read side's settings (``PATCHSTREAM_QUERY__*``): where the query service listens, who
may call it, and what search and context do by default. Part of ``Settings``."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr


class QuerySettings(BaseModel):
    """The read side: where the query service listens, who may call it, context defaults."""

    host: str = "127.0.0.1"
    port: int = 8731
    url: str = Field(
        default="http://127.0.0.1:8731",
        description="where clients find it; unset: this machine's, at host and port",
    )
    api_keys: dict[str, str] = Field(
        default_factory=dict,
        description="API key -> tenant. Empty: the dev key 'dev-local-key' (tenant 'default'), "
        "accepted on a loopback bind only.",
    )
    api_key: SecretStr = Field(
        default=SecretStr("dev-local-key"), description="the key the CLI and MCP server send"
    )
    agent_keys: list[str] = Field(
        default_factory=list,
        description="API keys held by agents (MCP servers, agent workers): a memory proposal "
        "through one may not name a source the memory policy trusts (`user`); give people "
        "and agents different keys",
    )
    gateway_upstream: str = Field(
        default="",
        description="the gateway this service forwards /v1/patches, /v1/traces and the "
        "webhooks to, so a client needs one URL (`up` sets it; empty: not forwarded)",
    )
    rate_per_key: float = Field(
        default=200.0,
        ge=0,
        description="Requests a second each API key may make (a token bucket; 0: no limit); "
        "over it, 429 with Retry-After.",
    )
    burst_per_key: int = Field(default=2000, ge=1, description="the bucket's size: a burst")
    default_budget_tokens: int = Field(default=8000, gt=0)
    entry_points: int = Field(default=5, gt=0, description="search hits expanded in the graph")
    tokens_per_entry: int = Field(
        default=800, gt=0,
        description="a larger budget takes one more entry point's code per this many tokens "
        "(at least entry_points): an 8k answer holds more of the best files' code, not only "
        "the 4k answer's blocks",
    )  # fmt: skip
    map_files: int = Field(
        default=20, ge=0, description="files context lists after the entry points, a line per match"
    )
    history_files: int = Field(
        default=3, ge=0,
        description="entry files whose last commits context lists after the entry code",
    )  # fmt: skip
    history_commits: int = Field(default=3, ge=1, le=20, description="commits listed per file")
    map_hits: int = Field(
        default=100, gt=0, le=100, description="search hits context reads (the file map's pool)"
    )
    max_body_bytes: int = Field(default=8 * 1024 * 1024, gt=0, description="per request")
    max_query_chars: int = Field(
        default=32_768, gt=0,
        description="search and context queries (an issue pasted whole: text, code, tracebacks)",
    )  # fmt: skip
    read_token_max_writes: int = Field(
        default=2000,
        gt=0,
        description="entries one read token may name (/v1/wait); a request carries at most "
        "1000 writes and a rename names two paths",
    )
    max_context_candidates: int = Field(
        default=400, gt=0, description="candidates the context assembler considers at most"
    )
    max_walk_rows: int = Field(
        default=2000, gt=0, description="symbols one callers/callees/impact walk returns at most"
    )
    context_walk_rows: int = Field(
        default=50,
        gt=0,
        description="callers (and callees) context reads per entry point, nearest first: "
        "their signatures are a few dozen tokens each, so more could not fit a budget anyway",
    )
    search_mirror: bool = Field(
        default=True,
        description="search an in-process copy of the chunk index (Milvus serves a tenant "
        "until its copy has loaded); off: every search goes to Milvus",
    )
    learned_file_ranking: bool = Field(
        default=True,
        description="the search copy orders files by the shipped learned ranker (a logistic "
        "model over the fusion's signals, chosen leave one repository out); off: by the "
        "fused score alone",
    )
    search_mirror_lag_s: float = Field(
        default=0.5, ge=0, description="how far the copy may trail Milvus (/v1/wait syncs it)"
    )
    search_mirror_idle_lag_s: float = Field(
        default=2.0, ge=0,
        description="how far it may trail once nothing was written to the tenant for "
        "search_mirror_idle_after_s (a quiet stack polls Milvus less; 0: always the lag above)",
    )  # fmt: skip
    search_mirror_idle_after_s: float = Field(default=60.0, gt=0)
    search_mirror_max_rows: int = Field(
        default=1_000_000, gt=0,
        description="chunk rows one tenant's copy may hold; a larger tenant searches Milvus",
    )  # fmt: skip
    search_copy_wait_s: float = Field(
        default=10.0, ge=0,
        description="a search while the tenant's search copy is still loading waits this long "
        "for it; then Milvus answers, and the answer says so (it may rank differently)",
    )  # fmt: skip
    freeze_loaded_copy: bool = Field(
        default=True,
        description="once a tenant's copy has loaded, move the heap into Python's permanent "
        "generation (gc.freeze): a full collection then skips the copy's objects instead of "
        "pausing the service ~0.25 s per 40k rows",
    )
    mcp_port: int = Field(default=8732, description="MCP over streamable HTTP")
    session_ttl_s: float = Field(
        default=7 * 24 * 3600, gt=0,
        description="a session's working state lives this long after its last write",
    )  # fmt: skip
    state_expiry_interval_s: float = Field(
        default=300.0,
        gt=0,
        description="how often expired sessions, memories and idle workspaces are deleted",
    )
    workspace_ttl_s: float = Field(
        default=7 * 24 * 3600, gt=0,
        description="an agent workspace overlay is dropped this long after its last write",
    )  # fmt: skip
    closed_overlay_grace_s: float = Field(
        default=600.0, ge=0,
        description="a branch overlay closed by a deletion or merge is dropped after this",
    )  # fmt: skip
