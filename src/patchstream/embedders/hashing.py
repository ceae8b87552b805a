"""A deterministic lexical embedder with no model: identifiers feature-hashed into a vector.

Useful for tests and for a fast first index; it captures shared identifiers, not meaning.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import xxhash

from patchstream.embedders.base import Embedder

_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+")


def split_identifiers(text: str) -> list[str]:
    """``parseHTTPResponse_v2`` -> ``parse http response v2`` (lower-cased)."""
    tokens: list[str] = []
    for word in _WORDS.findall(text):
        parts = _CAMEL.findall(word) or [word]
        tokens.extend(part.lower() for part in parts)
        if len(parts) > 1:
            tokens.append(word.lower())  # the whole identifier counts too
    return tokens


class HashingEmbedder(Embedder):
    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"
        self.batch_size = 1024

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for token in split_identifiers(text):
            digest = xxhash.xxh64_intdigest(token.encode())
            sign = 1.0 if digest & 1 else -1.0
            vector[(digest >> 1) % self.dim] += sign
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            vector[0] = 1.0
            return vector
        return [v / norm for v in vector]

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]
