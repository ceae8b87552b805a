"""The search copy's dense vectors as int8 codes, one scale per row (issue #57).

Milvus keeps every vector in float32, and the query service's search copy used to keep a
second float32 copy: at 6.5k files the copy's matrix alone was ~230 MiB. A unit vector's
components are coded as ``round(x / s)`` with ``s = max|x| / 127``, a quarter of the bytes;
a cosine is then ``(q @ codes) * s``. The error of one component is at most ``s / 2``
(~0.001 for MiniLM's 384 dimensions), small beside the gaps between neighbours;
``bench/dense_codes.py`` measures recall@10 against the float32 ranking on real code.

numpy has no int8 x float32 product, so codes are widened a block at a time. A block is
sized to stay in a core's L2 cache (~768 KiB of float32: 512 rows at 384 dimensions): at 190k
rows and a query of every dimension, 15-17 ms against 27-54 ms with 16k-row blocks (25 MiB
each, widened in memory and read back), in the same run on this machine's EPYC (2 MiB L2).
"""

from __future__ import annotations

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
