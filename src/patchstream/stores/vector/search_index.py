"""An in-memory hybrid index of one tenant's chunk rows: what ``search_mirror`` keeps.

Pure data structure, no I/O. It answers what the chunks collection's ``hybrid_search`` did
before Milvus kept no dense vector (layout v3): exact cosine over unit dense vectors and
BM25 (k1 1.5, b 0.75; IDF ``log((N - df + .5)/(df + .5) + 1)``), each cut to its top ``k``,
fused by reciprocal rank (k = 60, ranks from 1). It differs on purpose, each measured on the
localization sets of ``bench/context_quality.py``:

- the dense side is exact over the int8 codes (Milvus's HNSW was approximate), and BM25
  statistics are those of the rows the question reads (its repository and ref, an
  overlay's merge), not the tenant's or one storage segment's;
- the analyzer is made for code (``code_tokens``): identifiers also count as their parts
  (``update_settings``, ``CaseInsensitiveDict``), common suffixes are stripped, and a row's
  path counts as its text;
- a third ranked list joins the fusion: each row's *file*, ranked by BM25 over all of the
  file's rows, so a chunk of a file that matches the question as a whole ranks higher;
- a fourth: the file's *name* (its stem, or its package's for ``__init__``), ranked by the
  rarity of the question's words it holds: "Remove deprecated signals" is ``signals.py``
  even where a hundred files mention signals.

Rows live in growing numpy arrays; removing one marks it dead (filters read the ``alive``
mask) and the arrays are compacted once the dead outnumber the live.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from patchstream.parsing.file_roles import is_auxiliary
from patchstream.stores.vector.dense_codes import cosine_scores, unit_codes
from patchstream.stores.vector.file_ranker import FileRanker, module_parts
from patchstream.stores.vector.learned_order import Signals, learned_order
from patchstream.stores.vector.ranking import (
    Matches,
    file_bm25,
    positive_top,
    ranks_of,
    row_bm25,
    spread,
    top,
)
from patchstream.stores.vector.search_text import code_tokens

RRF_K = 60
FILE_WEIGHT = 3.0  # the file list's weight in the fusion (1.0 would be the others')
NAME_WEIGHT = 0.5  # the file-name list's
NAMED_WEIGHT = 1.0  # the list of files defining what the question names (from the graph)
AUXILIARY_WEIGHT = 0.25  # an auxiliary row's fused score is scaled by this (file_roles; chosen LOO)
ROWS_PER_FILE = 1  # rows of one file before the next files' (the rest follow, in order)
# A question's words held by more than this share of the rows (and by more than
# MIN_PRUNED_DF rows: a small index leaves nothing out) are left out of its lexical scores,
# BM25 over rows and over files. An issue's "the", "self", "return" were 76% of the postings
# one read at 5k files, for IDFs under log(10). Chosen leave one repository out on SWE-bench
# Lite (folds chose 0.05-0.25; held out @1/@5/@10 0.542/0.791/0.831 against 0.534/0.787/0.831
# leaving nothing out, search p99 152 -> 54 ms). 1.0 leaves nothing out.
MAX_DF_SHARE = 0.1
LEARNED_DEPTH = 60  # the rows a search fuses for the learned ranker (3x of each list), any limit
MIN_PRUNED_DF = 1000


@dataclass(frozen=True)
class IndexedRow:
    """What the index keeps of a chunk row: what it ranks by, and the payload it returns."""

    pk: str
    scope: str
    kind: str
    path: str
    text: str
    dense: Sequence[float] | npt.NDArray[np.float32]
    payload: object = None  # what a search returns for the row (the index never reads it)
    codes: tuple[npt.NDArray[np.int8], float] | None = None  # ``dense`` coded already


class _Codes:
    """Strings interned as small ints, so filters are integer compares over arrays."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []

    def code(self, name: str) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.names)
            self.names.append(name)
        return found


class TenantIndex:
    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self.size = 0  # rows used, dead ones included
        self.live = 0
        self.total_length = 0.0  # tokens over live rows (BM25's average document length)
        # One column per row: a query vector with few non-zero dimensions (the hashing
        # embedder's: a handful of tokens) reads only those dimensions' rows of this matrix,
        # each contiguous, instead of every row's whole vector (17 ms -> well under 1 ms at
        # 156k rows). Int8 codes with a scale per row (``dense_codes``): Milvus holds the
        # float32 vectors, this copy a quarter of their bytes.
        self.by_dim = np.zeros((dim, capacity), np.int8)
        self.scale = np.zeros(capacity, np.float32)
        self.alive = np.zeros(capacity, bool)
        self.scope = np.zeros(capacity, np.int32)
        self.kind = np.zeros(capacity, np.int32)
        self.path = np.zeros(capacity, np.int32)
        self.length = np.zeros(capacity, np.float32)
        self.pks: list[str] = []
        self.payloads: list[object] = []  # by row, like pks
        self.rows: dict[str, int] = {}  # pk -> row
        self.postings: dict[str, tuple[array[int], array[float]]] = {}
        self.scopes, self.kinds, self.paths = _Codes(), _Codes(), _Codes()
        self.name_postings: dict[str, array[int]] = {}  # file-name token -> path codes
        self.file_names: dict[str, list[str]] = {}  # file name -> paths (a question's paths)
        self.auxiliary: list[bool] = []  # by path code: a test, doc or example file
        self.module_of: list[tuple[str, ...]] = []  # by path code: its module's parts
        self.module_tails: dict[tuple[str, ...], array[int]] = {}  # last two parts -> codes

    # -- writes ---------------------------------------------------------------------------

    def add(self, row: IndexedRow) -> None:
        """Insert or replace the row with ``row.pk``."""
        self.remove(row.pk)
        if self.size == len(self.alive):
            self.reserve(1)
        at = self.size
        self.size += 1
        self.pks.append(row.pk)
        self.payloads.append(row.payload)
        self.rows[row.pk] = at
        if row.codes is not None:  # as Milvus keeps them (``dense_codes.encode``)
            self.by_dim[:, at], self.scale[at] = row.codes
        else:
            self.by_dim[:, at], self.scale[at] = unit_codes(row.dense)
        self.alive[at] = True
        self.scope[at] = self.scopes.code(row.scope)
        self.kind[at] = self.kinds.code(row.kind)
        known_paths = len(self.paths.names)
        self.path[at] = self.paths.code(row.path)
        if len(self.paths.names) > known_paths:  # a new path: index its name once
            self.auxiliary.append(is_auxiliary(row.path))
            self.file_names.setdefault(row.path.rpartition("/")[2], []).append(row.path)
            parts = module_parts(row.path)
            self.module_of.append(parts)
            if len(parts) >= 2:
                self.module_tails.setdefault(parts[-2:], array("i")).append(known_paths)
            for token in set(code_tokens(_file_name(row.path))):
                self.name_postings.setdefault(token, array("i")).append(known_paths)
        counts = Counter(code_tokens(row.text))
        counts.update(code_tokens(row.path))
        length = float(sum(counts.values()))
        self.length[at] = length
        self.total_length += length
        self.live += 1
        for token, tf in counts.items():
            posting = self.postings.get(token)
            if posting is None:
                posting = self.postings[token] = (array("i"), array("f"))
            posting[0].append(at)
            posting[1].append(float(tf))

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` more rows: a load that knows its row count grows the arrays once,
        to the size it needs. Otherwise they grow by a quarter, not double: the matrix is most
        of the copy's memory and the old and the new one are both alive while it grows (still
        amortized O(1) a row, and a sync that adds a few rows does not copy the matrix)."""
        if self.size + rows > len(self.alive):
            self._grow(self.size + max(rows, 16, self.size // 4))

    def remove(self, pk: str) -> None:
        at = self.rows.pop(pk, None)
        if at is None:
            return
        self.alive[at] = False
        self.payloads[at] = None  # a dead row's text is not kept until the next compaction
        self.live -= 1
        self.total_length -= float(self.length[at])
        if self.size - self.live > max(4096, self.live):
            self._compact()

    _ARRAYS = ("alive", "scale", "scope", "kind", "path", "length")  # by row; ``by_dim`` not

    def _grow(self, capacity: int) -> None:
        for name in self._ARRAYS:
            values = getattr(self, name)
            grown = np.zeros(capacity, values.dtype)
            grown[: len(values)] = values
            setattr(self, name, grown)
        by_dim = np.zeros((self.dim, capacity), self.by_dim.dtype)
        by_dim[:, : self.by_dim.shape[1]] = self.by_dim
        self.by_dim = by_dim

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.size])
        remap = np.full(self.size, -1, np.int64)
        remap[keep] = np.arange(len(keep))
        for name in self._ARRAYS:
            values = getattr(self, name)
            moved = np.zeros_like(values)
            moved[: len(keep)] = values[keep]
            setattr(self, name, moved)
        by_dim = np.zeros_like(self.by_dim)
        by_dim[:, : len(keep)] = self.by_dim[:, keep]
        self.by_dim = by_dim
        self.pks = [self.pks[i] for i in keep.tolist()]
        self.payloads = [self.payloads[i] for i in keep.tolist()]
        self.rows = {pk: i for i, pk in enumerate(self.pks)}
        self.size = len(keep)
        postings = {}
        for token, (rows, tfs) in self.postings.items():
            old = np.frombuffer(rows, np.int32).astype(np.int64)
            new = remap[old]
            kept = new >= 0
            if kept.any():
                postings[token] = (
                    array("i", new[kept].astype(np.int32).tobytes()),
                    array("f", np.frombuffer(tfs, np.float32)[kept].tobytes()),
                )
        self.postings = postings

    # -- reads ----------------------------------------------------------------------------

    def payload(self, pk: str) -> object:
        """The payload the live row ``pk`` was added with (None for an unknown key)."""
        at = self.rows.get(pk)
        return None if at is None else self.payloads[at]

    def rows_of_path(self, path: str) -> list[int]:
        """The live rows of ``path`` (in every scope)."""
        code = self.paths.ids.get(path)
        if code is None:
            return []
        n = self.size
        rows: list[int] = np.flatnonzero((self.path[:n] == code) & self.alive[:n]).tolist()
        return rows

    def mask(
        self,
        scopes: Iterable[str] | None = None,
        kind: str | None = None,
        path_prefix: str | None = None,
        hidden: Iterable[tuple[str, Iterable[str]]] = (),
    ) -> npt.NDArray[np.bool_]:
        """Live rows of ``scopes`` (all when None), of ``kind``, under ``path_prefix``,
        less the rows of a scope at the paths ``hidden`` names for it (a view's shadows)."""
        n = self.size
        keep = self.alive[:n].copy()
        if scopes is not None:
            codes = [self.scopes.ids[s] for s in scopes if s in self.scopes.ids]
            keep &= np.isin(self.scope[:n], codes)
        if kind is not None:
            keep &= self.kind[:n] == self.kinds.ids.get(kind, -1)
        if path_prefix is not None:
            codes = [i for i, p in enumerate(self.paths.names) if p.startswith(path_prefix)]
            keep &= np.isin(self.path[:n], codes)
        for scope, paths in hidden:
            if scope not in self.scopes.ids:
                continue
            codes = [self.paths.ids[p] for p in paths if p in self.paths.ids]
            if codes:
                layer = self.scope[:n] == self.scopes.ids[scope]
                keep &= ~(layer & np.isin(self.path[:n], codes))
        return keep

    def dense_top(self, query: list[float], keep: npt.NDArray[np.bool_], k: int) -> list[int]:
        """Rows by cosine similarity to ``query``, best first (at most ``k``)."""
        if k <= 0 or not keep.any():
            return []
        return top(self._dense_scores(query, keep), min(k, int(keep.sum())))

    def bm25_scores(
        self, query: str, keep: npt.NDArray[np.bool_] | None = None
    ) -> npt.NDArray[np.float32]:
        """BM25 score of every row of ``keep`` (live rows when None) for ``query``, 0 elsewhere.
        The statistics (document count, frequencies, average length) are those of ``keep``
        alone: the view a question reads, not every repository and ref of the tenant, so an
        answer does not move with what else is indexed."""
        alive = self.alive[: self.size]
        keep = alive if keep is None else keep[: self.size] & alive
        return self._row_bm25(self._matches(query, keep), keep)

    def _matches(
        self, query: str, keep: npt.NDArray[np.bool_], max_df_share: float = 1.0
    ) -> Matches:
        """The kept rows each of ``query``'s tokens occurs in, gathered once for all tokens:
        an issue-length question has hundreds, and numpy calls per token were most of its
        search time (django, 114 issues: p99 175 -> 64 ms). A token in more than
        ``max_df_share`` of the live rows is left out (its posting's length against the
        live rows: no pass over the posting to know it)."""
        weights: list[float] = []
        rows: list[npt.NDArray[np.int32]] = []
        tfs: list[npt.NDArray[np.float32]] = []
        most = max(max_df_share * self.live, MIN_PRUNED_DF) if max_df_share < 1.0 else math.inf
        for token, weight in Counter(code_tokens(query)).items():
            posting = self.postings.get(token)
            if posting is not None and 0 < len(posting[0]) <= most:
                weights.append(float(weight))
                rows.append(np.frombuffer(posting[0], np.int32))
                tfs.append(np.frombuffer(posting[1], np.float32))
        if not rows:
            return Matches(np.zeros(0, np.int64), np.zeros(0, np.float32),
                            np.zeros(0, np.int64), np.zeros(0, np.float64))  # fmt: skip
        row = np.concatenate(rows).astype(np.int64)
        ordinal = np.repeat(np.arange(len(rows), dtype=np.int64), [len(r) for r in rows])
        if self.live == self.size and keep[: self.size].all():  # every row kept: no filter
            return Matches(row, np.concatenate(tfs), ordinal, np.asarray(weights, np.float64))
        kept = keep[row]
        return Matches(row[kept], np.concatenate(tfs)[kept], ordinal[kept],
                        np.asarray(weights, np.float64))  # fmt: skip

    def _row_bm25(self, found: Matches, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
        return row_bm25(found, keep[: self.size], self.length[: self.size])

    def bm25_top(self, query: str, keep: npt.NDArray[np.bool_], k: int) -> list[int]:
        """Rows of ``keep`` by BM25 score for ``query``, best first (at most ``k``, each > 0)."""
        if k <= 0:
            return []
        return positive_top(self.bm25_scores(query, keep), k)

    def file_scores(self, query: str, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
        """BM25 score of every file (by path code) for ``query``, a file being the kept rows
        of that path taken together: term counts and lengths summed over its rows."""
        keep = keep[: self.size] & self.alive[: self.size]
        return self._file_bm25(self._matches(query, keep), keep)

    def _file_bm25(self, found: Matches, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
        n = self.size
        return file_bm25(found, keep[:n], self.path[:n], self.length[:n], len(self.paths.names))

    def name_scores(self, query: str, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
        """Score of every file (by path code) whose name holds words of ``query``: the sum
        of those words' IDF over the names of the files with kept rows."""
        files = len(self.paths.names)
        scores = np.zeros(files, np.float32)
        present = np.bincount(self.path[: self.size][keep[: self.size]], minlength=files) > 0
        count = int(present.sum())
        for token in set(code_tokens(query)):
            codes = self.name_postings.get(token)
            if codes is None:
                continue
            held = np.frombuffer(codes, np.int32)
            held = held[present[held]]
            if len(held):
                # +1e-3: a word in every kept name (IDF 0) still marks those files, barely
                scores[held] += math.log(count / len(held)) + 1e-3
        return scores

    def search(
        self,
        query: str,
        vector: list[float],
        keep: npt.NDArray[np.bool_],
        limit: int,
        file_weight: float = FILE_WEIGHT,
        name_weight: float = NAME_WEIGHT,
        named_files: Sequence[str] = (),
        named_weight: float = NAMED_WEIGHT,
        auxiliary_weight: float = AUXILIARY_WEIGHT,
        named_explicit: int | None = None,
        rows_per_file: int = ROWS_PER_FILE,
        max_df_share: float = MAX_DF_SHARE,
        ranker: FileRanker | None = None,
        definer_weights: Mapping[str, float] | None = None,
    ) -> list[tuple[str, float]]:
        """(pk, score), best first: dense and BM25 tops of ``3 * limit`` each, fused
        by reciprocal rank with the rank of each row's file (weighted ``file_weight``), of
        its file's name (``name_weight``) and of the files the question names in code
        (``named_files``, best first, from the graph: ``named_weight``; each such file's best
        BM25 row joins the candidates), cut to ``limit``. Rows of tests, docs and examples
        are scaled by ``auxiliary_weight`` (``file_roles``) unless the question names the
        file itself: the first ``named_explicit`` of ``named_files`` (all when None), those
        a traceback frame or a path names; a test that merely defines a name the question
        uses is still demoted. A file's rows past its first ``rows_per_file`` (0: no cap)
        come after every other file's, in order: one long file's many matching chunks do not
        fill the answer alone (a 3,000-line test file took all 60 rows of one question).
        Words in more than ``max_df_share`` of the rows do not count lexically.

        With a ``ranker`` (``file_ranker``), files are ordered by its score over their
        features (``definer_weights``: path -> the weight of the question's names it
        defines), each file's rows by their fused score; the scores returned are then the
        ranker's (a logistic probability), made non-increasing down the list."""
        # The ranker's features read the fusion at one depth, whatever the limit: as trained.
        depth = max(limit, LEARNED_DEPTH) if ranker is not None else limit
        signals = self.signals(query, vector, keep, depth, file_weight, name_weight,
                               named_files, named_weight, auxiliary_weight, named_explicit,
                               max_df_share, definer_weights)  # fmt: skip
        if ranker is not None and signals.fused:
            return learned_order(self, ranker, signals, limit, rows_per_file)
        ordered = sorted(signals.fused.items(), key=lambda item: (-item[1], self.pks[item[0]]))
        winners = spread(ordered, self.path, rows_per_file)[:limit]
        return [(self.pks[row], score) for row, score in winners]

    def signals(
        self,
        query: str,
        vector: list[float],
        keep: npt.NDArray[np.bool_],
        limit: int,
        file_weight: float = FILE_WEIGHT,
        name_weight: float = NAME_WEIGHT,
        named_files: Sequence[str] = (),
        named_weight: float = NAMED_WEIGHT,
        auxiliary_weight: float = AUXILIARY_WEIGHT,
        named_explicit: int | None = None,
        max_df_share: float = MAX_DF_SHARE,
        definer_weights: Mapping[str, float] | None = None,
    ) -> Signals:
        """What ``search`` ranks by: every row's dense and BM25 scores, the fused scores of
        the rows the fusion considers, and the file-level lists."""
        fused: dict[int, float] = {}
        keep = keep[: self.size] & self.alive[: self.size]
        found = self._matches(query, keep, max_df_share)  # one gather: rows' and files' BM25
        lexical = self._row_bm25(found, keep)  # kept: the named files' best rows read it
        dense = self._dense_scores(vector, keep)
        dense_ranked = top(dense, min(3 * limit, int(keep.sum())))
        for ranked in (dense_ranked, positive_top(lexical, 3 * limit)):
            for rank, row in enumerate(ranked, start=1):
                fused[row] = fused.get(row, 0.0) + 1.0 / (RRF_K + rank)
        named = self._named_rows(named_files, keep, lexical) if named_weight > 0 else {}
        for _, top_row in named.values():
            fused.setdefault(top_row, 0.0)
        file_scores = self._file_bm25(found, keep)
        names = self.name_scores(query, keep)
        for weight, scores in ((file_weight, file_scores), (name_weight, names)):
            if weight <= 0 or not fused:
                continue
            rows = np.fromiter(fused, np.int64, len(fused))
            for row, rank in zip(rows.tolist(), ranks_of(scores, self.path[rows]).tolist(),
                                 strict=True):  # fmt: skip
                if rank:
                    fused[row] += weight / (RRF_K + rank)
        explicit = named_files if named_explicit is None else named_files[:named_explicit]
        exempt = {self.paths.ids.get(path) for path in explicit}
        for row in fused:
            code = int(self.path[row])
            hit = named.get(code)
            if hit is not None:
                fused[row] += named_weight / (RRF_K + hit[0])
            if self.auxiliary[code] and code not in exempt:
                fused[row] *= auxiliary_weight
        return Signals(query, keep, dense, lexical, fused, file_scores, names, named, exempt,
                       definer_weights or {})  # fmt: skip

    def _dense_scores(
        self, vector: list[float], keep: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float32]:
        """Cosine of every row to ``vector``; -inf where not kept."""
        if not keep.any():
            return np.full(self.size, -np.inf, np.float32)
        scores = cosine_scores(np.asarray(vector, np.float32), self.by_dim[:, : self.size],
                               self.scale)  # fmt: skip
        scores[~keep] = -np.inf
        return scores

    def _named_rows(
        self, files: Sequence[str], keep: npt.NDArray[np.bool_], lexical: npt.NDArray[np.float32]
    ) -> dict[int, tuple[int, int]]:
        """Path code -> (rank from 1, its kept row scoring best in ``lexical``) for each of
        ``files`` the index holds rows of."""
        codes = list(dict.fromkeys(c for c in map(self.paths.ids.get, files) if c is not None))
        if not codes:
            return {}
        rows = np.flatnonzero(keep[: self.size])
        rows = rows[np.isin(self.path[rows], codes)]
        # by file, then best lexical score first; a stable sort keeps the lowest row of a tie
        rows = rows[np.lexsort((-lexical[rows], self.path[rows]))]
        held, first = np.unique(self.path[rows], return_index=True)
        best = dict(zip(held.tolist(), rows[first].tolist(), strict=True))
        found: dict[int, tuple[int, int]] = {}
        for code in codes:
            if code in best:
                found[code] = (len(found) + 1, best[code])
        return found


def _file_name(path: str) -> str:
    """A file's own name: ``signals`` for ``scrapy/signals.py``, ``http`` for
    ``scrapy/http/__init__.py``."""
    directory, _, name = path.rpartition("/")
    stem = name.rsplit(".", 1)[0]
    return directory.rpartition("/")[2] if stem == "__init__" and directory else stem
