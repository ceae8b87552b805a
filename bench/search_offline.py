"""Search ranking without a stack: the query service's in-memory index (``TenantIndex``), fed
the chunks the parse stage makes, ranks each localization question; a plain file BM25 ranks
it too, in the same run. Minutes instead of an hour per lever, for measuring ranking changes;
``context_quality.py`` remains the end-to-end figure (HTTP, context, both embedders).

    python bench/search_offline.py [--sets scrapy pytest] [--embedder hashing]

Prints, per set: file accuracy@1/5/10 (the share of questions with a changed file among the
first k distinct files), test/doc files in the top 10, and the BM25 baseline's figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from context_quality import FileBM25, load_set
from patchstream.config.settings import QuerySettings, Settings
from patchstream.embedders.base import Embedder
from patchstream.embedders.factory import create_embedder
from patchstream.parsing.file_roles import is_auxiliary
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.tokens import TokenCounter
from patchstream.query.context import assemble
from patchstream.query.file_map import (
    entry_hits,
    file_map_candidates,
    hit_candidate,
    remaining_candidates,
)
from patchstream.query.question import file_name_index, named_files, named_in
from patchstream.schemas.chunks import Chunk
from patchstream.stores.vector.file_ranker import LinearRanker
from patchstream.stores.vector.milvus_rows import SearchHit
from patchstream.stores.vector.search_index import (
    AUXILIARY_WEIGHT,
    FILE_WEIGHT,
    MAX_DF_SHARE,
    NAMED_WEIGHT,
    ROWS_PER_FILE,
    IndexedRow,
    TenantIndex,
)

SCOPE = "t|set|main"


def build_index(
    sources: dict[str, str], embedder: Embedder
) -> tuple[TenantIndex, dict[str, set[str]]]:
    """The index, and name -> files defining it (what the graph's symbols_by_name answers)."""
    builder = FileStateBuilder()
    chunks: list[Chunk] = []
    definers: dict[str, set[str]] = {}
    for path, text in sources.items():
        state = builder.build(FileRef("t", "set", "main", path, 1), text.encode())
        chunks += state.chunks
        for symbol in state.symbols:
            for name in {symbol.name, symbol.qualified_name}:
                definers.setdefault(name, set()).add(path)
    index = TenantIndex(embedder.dim)
    index.reserve(len(chunks))
    vectors = embedder.embed([chunk.text for chunk in chunks])
    for chunk, dense in zip(chunks, vectors, strict=True):
        index.add(indexed_row(chunk, dense))
    return index, definers


def indexed_row(chunk: Chunk, dense: Sequence[float]) -> IndexedRow:
    """A chunk as the in-memory index holds it, the payload being the hit a search returns
    (what context is assembled from)."""
    hit = SearchHit(0.0, chunk.id, chunk.symbol_id, "set", "main", chunk.path,
                    chunk.kind.value, "code", chunk.start_line, chunk.end_line,
                    chunk.content_hash, 1, chunk.text)  # fmt: skip
    return IndexedRow(f"{chunk.path}#{chunk.id}", SCOPE, chunk.kind.value, chunk.path,
                      chunk.text, np.asarray(dense, np.float32), hit)  # fmt: skip


def ranked_files(
    index: TenantIndex, vector: list[float], question: str, named: list[str], weight: float,
    auxiliary_weight: float = AUXILIARY_WEIGHT, file_weight: float = FILE_WEIGHT,
    named_explicit: int | None = None, rows_per_file: int = ROWS_PER_FILE,
    max_df_share: float = MAX_DF_SHARE, ranker: LinearRanker | None = None,
    definer_weights: dict[str, float] | None = None,
) -> list[str]:  # fmt: skip
    files: list[str] = []
    found = index.search(question, vector, index.mask([SCOPE]), 60, named_files=named,
                         named_weight=weight, auxiliary_weight=auxiliary_weight,
                         file_weight=file_weight, named_explicit=named_explicit,
                         rows_per_file=rows_per_file, max_df_share=max_df_share,
                         ranker=ranker, definer_weights=definer_weights)  # fmt: skip
    for pk, _ in found:
        path = _hit(index, pk).path
        if path not in files:
            files.append(path)
    return files


def _hit(index: TenantIndex, pk: str) -> SearchHit:
    hit = index.payload(pk)
    assert isinstance(hit, SearchHit)
    return hit


def context_code(
    index: TenantIndex, vector: list[float], question: str, named: list[str],
    explicit: int | None, budget: int, counter: TokenCounter, wanted: QuerySettings,
    rows_per_file: int = ROWS_PER_FILE, ranker: LinearRanker | None = None,
    definer_weights: dict[str, float] | None = None,
) -> tuple[set[str], int]:  # fmt: skip
    """The files whose code (not a file-map line) a ``budget`` context holds, and the tokens
    it used: the query service's candidate order (entry points' code, the file map, the rest
    of the search's code) and assembler, without the graph's caller and callee signatures,
    which the service puts between the file map and the rest."""
    entry_points = max(wanted.entry_points, budget // wanted.tokens_per_entry)
    found = index.search(question, vector, index.mask([SCOPE]),
                         max(entry_points * 2, wanted.map_hits), named_files=named,
                         named_explicit=explicit, rows_per_file=rows_per_file,
                         ranker=ranker, definer_weights=definer_weights)  # fmt: skip
    hits = [_hit(index, pk) for pk, _ in found]
    entries = entry_hits(hits, entry_points)
    candidates = [hit_candidate("entry-code", hit) for hit in entries]
    candidates += file_map_candidates(hits, wanted.map_files,
                                      skip={(h.repo, h.ref, h.path) for h in entries})  # fmt: skip
    candidates += remaining_candidates(hits, entries)
    blocks, used = assemble(candidates[: wanted.max_context_candidates], budget, counter)
    return {b.path for b in blocks if b.source == "code"}, used


def definers_of(table: dict[str, set[str]]) -> Callable[[Sequence[str]], dict[str, set[str]]]:
    return lambda names: {name: table.get(name, set()) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="+", default=["scrapy", "pytest"])
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument(
        "--named-weight",
        type=float,
        default=NAMED_WEIGHT,
        help="weight of the files the question names (0: off)",
    )
    parser.add_argument("--rows-per-file", type=int, default=ROWS_PER_FILE,
                        help="rows of one file before the next files' (0: no cap)")  # fmt: skip
    args = parser.parse_args()
    settings = Settings()
    counter = TokenCounter(settings.parsing.token_encoding)
    print(f"machine {machine()}; embedder {args.embedder}; named weight {args.named_weight}; "
          f"rows per file {args.rows_per_file}")  # fmt: skip
    for name in args.sets:
        chosen = load_set(name)
        with tempfile.TemporaryDirectory() as tmp:
            chosen.extract(Path(tmp))
        started = time.monotonic()
        embedder = create_embedder(Settings().embedding.model_copy(update={"kind": args.embedder}))
        index, definers = build_index(chosen.sources, embedder)
        baseline = FileBM25(chosen.sources)
        built = time.monotonic() - started
        ours = {1: 0, 5: 0, 10: 0}
        theirs = {1: 0, 5: 0, 10: 0}
        in_context = {4000: 0, 8000: 0}
        aux = 0
        by_name = file_name_index(chosen.sources)
        for q in chosen.questions:
            pointed = named_files(named_in(q.question), definers_of(definers), by_name)
            vector = embedder.embed([q.question])[0]
            files = ranked_files(index, vector, q.question, pointed.files, args.named_weight,
                                 named_explicit=pointed.explicit,
                                 rows_per_file=args.rows_per_file)  # fmt: skip
            for budget in in_context:
                held, _ = context_code(index, vector, q.question, pointed.files,
                                       pointed.explicit, budget, counter, settings.query,
                                       args.rows_per_file)  # fmt: skip
                in_context[budget] += bool(held & q.files)
            base = baseline.rank(q.question)
            aux += sum(is_auxiliary(f) for f in files[:10])
            for k in ours:
                ours[k] += bool(set(files[:k]) & q.files)
                theirs[k] += bool(set(base[:k]) & q.files)
        n = len(chosen.questions)
        print(f"{name}: {n} questions, {len(chosen.sources)} files, index {built:.1f}s | "
              + "  ".join(f"acc@{k} {ours[k] / n:.3f}" for k in ours)
              + f"  tests/docs in top10 {aux / n:.2f} | BM25 "
              + "  ".join(f"acc@{k} {theirs[k] / n:.3f}" for k in theirs)
              + " | changed file's code in context "
              + "  ".join(f"{b // 1000}k {c / n:.3f}" for b, c in in_context.items()))  # fmt: skip


if __name__ == "__main__":
    main()
