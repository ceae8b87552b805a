"""Any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, TEI, vLLM, Ollama)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence

import httpx

from patchstream.embedders.base import Embedder
from patchstream.errors import EmbedderError

_RETRYABLE = {408, 409, 425, 429, 500, 502, 503, 504}


class OpenAIEmbedder(Embedder):
    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 5,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = f"openai-{model}-{dim}"
        self.model = model
        self.dim = dim
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        payload = {"model": self.model, "input": list(texts)}
        last_error = ""
        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.post("/v1/embeddings", json=payload)
            except httpx.TransportError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    return self._parse(response, len(texts))
                last_error = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in _RETRYABLE:
                    break
            if attempt < self.max_retries:
                # Exponential backoff with jitter; this runs in a worker thread, not the loop.
                time.sleep(self.backoff_s * (2**attempt) * (0.5 + random.random()))
        raise EmbedderError(
            f"embedding endpoint {self.client.base_url} failed after "
            f"{self.max_retries + 1} tries: {last_error}"
        )

    def _parse(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(v) for v in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"embedding endpoint answered an unexpected body: {exc}") from exc
        if len(vectors) != expected or any(len(v) != self.dim for v in vectors):
            raise EmbedderError(
                f"embedding endpoint returned {len(vectors)} vectors of dimension "
                f"{len(vectors[0]) if vectors else 0}; expected {expected} of {self.dim}. "
                "Set PATCHSTREAM_EMBEDDING__DIM to the model's dimension."
            )
        return [_normalized(v) for v in vectors]

    def close(self) -> None:
        self.client.close()


def _normalized(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]
