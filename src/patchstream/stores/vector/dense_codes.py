"""Dense vectors as int8 codes, one scale per row (issue #57): how the query service's search
copy ranks them, and how Milvus keeps them (``encode``: base64 in a VARCHAR).

Milvus used to keep every vector in float32 with an HNSW index over them (1.5 KB + ~0.5 KB
a row of Milvus Lite's memory), and the search copy a second float32 copy: at 6.5k files the
copy's matrix alone was ~230 MiB. Dense search is the copy's alone now, so Milvus keeps the
codes the copy loads as they are (~0.5 KB a row). A unit vector's components are coded as
``round(x / s)`` with ``s = max|x| / 127``, a quarter of the bytes; a cosine is then
``(q @ codes) * s``. The error of one component is at most ``s / 2`` (~0.001 for MiniLM's 384
dimensions), small beside the gaps between neighbours;
``bench/dense_codes.py`` measures recall@10 against the float32 ranking on real code.

numpy has no int8 x float32 product, so codes are widened a block at a time. A block is
sized to stay in a core's L2 cache (~768 KiB of float32: 512 rows at 384 dimensions): at 190k
rows and a query of every dimension, 15-17 ms against 27-54 ms with 16k-row blocks (25 MiB
each, widened in memory and read back), in the same run on this machine's EPYC (2 MiB L2).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

LEVELS = 127
BLOCK_BYTES = 768 << 10  # float32 of one widened block


def quantize(unit: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], float]:
    """``unit``'s int8 codes and the scale that turns them back (0 for a zero vector)."""
    peak = float(np.abs(unit).max()) if unit.size else 0.0
    if peak == 0.0:
        return np.zeros(unit.shape, np.int8), 0.0
    scale = peak / LEVELS
    return np.round(unit / scale).astype(np.int8), scale


def unit_codes(
    vector: Sequence[float] | npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], float]:
    """``vector`` scaled to unit length (a zero vector stays zero), then ``quantize``d."""
    unit = np.asarray(vector, np.float32)
    norm = float(np.linalg.norm(unit))
    return quantize(unit / norm if norm > 0 else unit)


def encode(vector: Sequence[float] | npt.NDArray[np.float32]) -> str:
    """``vector``'s unit vector as int8 codes, its scale after them (float32, little-endian),
    in base64: what the chunks collection keeps of an embedding."""
    codes, scale = unit_codes(vector)
    return base64.b64encode(codes.tobytes() + np.array([scale], "<f4").tobytes()).decode()


def decode(text: str, dim: int) -> tuple[npt.NDArray[np.int8], float]:
    """``encode``'s codes and scale; ValueError for a value of another length or alphabet."""
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"dense codes are not base64: {exc}") from exc
    if len(raw) != dim + 4:
        raise ValueError(f"dense codes of {len(raw) - 4} dimensions, expected {dim}")
    return np.frombuffer(raw[:dim], np.int8), float(np.frombuffer(raw[dim:], "<f4")[0])


def decoded_vector(text: str, dim: int) -> list[float]:
    """The unit vector ``encode`` coded, as far as the codes keep it (for a reused embedding:
    coding it again gives the same codes)."""
    codes, scale = decode(text, dim)
    return [float(v) for v in codes.astype(np.float32) * np.float32(scale)]


def encoded_length(dim: int) -> int:
    """Characters ``encode`` writes for ``dim`` dimensions."""
    return 4 * ((dim + 4 + 2) // 3)


def cosine_scores(
    query: npt.NDArray[np.float32], codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Each column of ``codes`` (``dim x rows``) scored against the unit ``query``. A query
    with few non-zero dimensions (the hashing embedder's) reads only those rows."""
    used = np.flatnonzero(query)
    rows = codes.shape[1]
    if len(used) * 4 < codes.shape[0]:
        scores = query[used] @ codes[used].astype(np.float32)
    else:
        scores = np.empty(rows, np.float32)
        step = max(64, BLOCK_BYTES // (4 * codes.shape[0]))
        for start in range(0, rows, step):
            block = codes[:, start : start + step].astype(np.float32)
            scores[start : start + step] = query @ block
    scores *= scales[:rows]
    return scores
