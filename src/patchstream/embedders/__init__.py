"""Embedders: one interface, chosen by ``PATCHSTREAM_EMBEDDER`` (hashing | minilm | openai)."""

from patchstream.embedders.base import Embedder
from patchstream.embedders.factory import create_embedder

__all__ = ["Embedder", "create_embedder"]
