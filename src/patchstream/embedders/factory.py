"""Build the configured embedder. A missing model is an error, never a silent fallback."""

from __future__ import annotations

from patchstream.config.settings import EmbeddingSettings
from patchstream.embedders.base import Embedder
from patchstream.errors import ConfigError


def create_embedder(settings: EmbeddingSettings) -> Embedder:
    kind = settings.kind
    if kind == "hashing":
        from patchstream.embedders.hashing import HashingEmbedder

        return HashingEmbedder(dim=settings.dim)
    if kind == "minilm":
        from patchstream.embedders.minilm import MiniLMEmbedder

        return MiniLMEmbedder(batch_size=settings.batch_size)
    if kind == "openai":
        from patchstream.embedders.openai import OpenAIEmbedder

        if not settings.openai_base_url or not settings.openai_model:
            raise ConfigError(
                "the openai embedder needs PATCHSTREAM_EMBEDDING__OPENAI_BASE_URL and "
                "PATCHSTREAM_EMBEDDING__OPENAI_MODEL (and __DIM for the model's dimension)"
            )
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return OpenAIEmbedder(
            base_url=settings.openai_base_url,
            model=settings.openai_model,
            dim=settings.dim,
            api_key=key,
            batch_size=settings.batch_size,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
        )
    raise ConfigError(f"unknown embedder {kind!r}; choose hashing, minilm or openai")
