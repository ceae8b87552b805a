"""The embedder interface."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Sequence


class Embedder(abc.ABC):
    """Turns texts into unit-length dense vectors of a fixed dimension.

    ``name`` identifies the model and settings: vectors of different names are never mixed
    (the vector store keeps one collection per name).
    """

    name: str
    dim: int
    #: texts per call to the model; callers may pass more, they are split
    batch_size: int = 64

    @abc.abstractmethod
    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` in batches; the result has one vector per text, in order."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self.batch_size]))
        return vectors

    async def embed_async(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed off the event loop (models are CPU-bound, HTTP clients block)."""
        return await asyncio.to_thread(self.embed, texts)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients or models."""
