"""Per-file features of one question, for learning the file ranker offline: exactly what the
query service's search copy computes (``TenantIndex.signals`` then
``learned_order.candidate_files``), so the model is trained on what it will be served.
Written as one JSON line per question by ``swebench_offline.py --features FILE``; read by
``learn_ranker.py``. One extra column, for analysis only: how many files import the file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from patchstream.query.question import NamedFiles
from patchstream.stores.vector.learned_order import candidate_files
from patchstream.stores.vector.search_index import LEARNED_DEPTH, TenantIndex

EXTRA = ("log_imported_by",)


def question_features(
    index: TenantIndex, scope: str, question: str, vector: Sequence[float], named: NamedFiles,
    imported_by: dict[str, int],
) -> dict[str, list[float]]:  # fmt: skip
    """Path -> the ranker's features of each candidate file, then ``EXTRA``."""
    signals = index.signals(question, list(vector), index.mask([scope]), LEARNED_DEPTH,
                            named_files=named.files, named_explicit=named.explicit,
                            definer_weights=named.weights)  # fmt: skip
    found = candidate_files(index, signals)
    out = {}
    for code, row in zip(found.codes.tolist(), found.features.tolist(), strict=True):
        path = index.paths.names[code]
        out[path] = [*row, math.log1p(imported_by.get(path, 0))]
    return out
