"""Parse bench: files/s, MB/s, symbols/s on one core; full parse vs incremental reparse.

Corpus: a named corpus (``medium`` by default: scipy's source tree from PyPI; ``npm``: rxjs's
TypeScript sources). Incremental: each file gets a one-line edit in its middle and is
reparsed with the previous tree (``Tree.edit``) versus from scratch, both in this run.

    python bench/parse.py [--corpus medium] [--update-readme]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    SOURCE_SUFFIXES,
    build_corpus,
    corpus_label,
    machine,
    print_rows,
    update_readme_row,
)
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.incremental import IncrementalParser
from patchstream.parsing.languages import language_for_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="medium", choices=["small", "medium", "large", "npm"])
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as stated
    with tempfile.TemporaryDirectory() as tmp:
        root = build_corpus(args.corpus, Path(tmp))
        sources = [
            (f.relative_to(root).as_posix(), f.read_bytes())
            for f in sorted(root.rglob("*"))
            if f.suffix in SOURCE_SUFFIXES and language_for_path(f.name)
        ]
    total_bytes = sum(len(data) for _, data in sources)
    total_lines = sum(data.count(b"\n") for _, data in sources)
    print(
        f"corpus {corpus_label(args.corpus)}: {len(sources)} files, {total_lines} lines, "
        f"{total_bytes / 1e6:.2f} MB; machine: {machine()}; 1 core"
    )

    # 1. Parse only, from scratch.
    # Every tree kept, with room for the edited bytes (at exactly the corpus's size, step 3's
    # first bigger file evicts the oldest tree, which is the next one it needs, and so on):
    # step 3 reparses each file from its own tree. A tree costs 25-30x its source.
    cold = IncrementalParser(
        cache_size=len(sources) + 1, timeout_micros=10_000_000, cache_bytes=2 * total_bytes
    )
    started = time.perf_counter()
    for path, data in sources:
        cold.parse(path, language_for_path(path) or "python", data)
    parse_s = time.perf_counter() - started

    # 2. Full extraction: parse + queries + chunks + hashes + token counts.
    builder = FileStateBuilder()
    symbols = 0
    started = time.perf_counter()
    for path, data in sources:
        state = builder.build(FileRef("t", "bench", "main", path, 1), data)
        symbols += len(state.symbols)
    extract_s = time.perf_counter() - started

    # 3. One-line edit in the middle: incremental (old tree) vs full reparse of the same bytes.
    edited = []
    for path, data in sources:
        middle = data.find(b"\n", len(data) // 2) + 1
        edited.append((path, data[:middle] + b"x_bench = 1\n" + data[middle:]))
    started = time.perf_counter()
    for path, data in edited:
        cold.parse(path, language_for_path(path) or "python", data)
    incremental_s = time.perf_counter() - started
    fresh = IncrementalParser(cache_size=0, timeout_micros=10_000_000)
    started = time.perf_counter()
    for path, data in edited:
        fresh.parse(path, language_for_path(path) or "python", data)
    full_s = time.perf_counter() - started

    per_file_ms = 1000 / len(sources)
    rows = {
        "parse files/s": f"{len(sources) / parse_s:.0f}",
        "parse MB/s": f"{total_bytes / 1e6 / parse_s:.2f}",
        "extract files/s": f"{len(sources) / extract_s:.0f}",
        "extract lines/s": f"{total_lines / extract_s:.0f}",
        "extract symbols/s": f"{symbols / extract_s:.0f}",
        "reparse after 1-line edit, full ms/file": f"{full_s * per_file_ms:.2f}",
        "reparse after 1-line edit, incremental ms/file": f"{incremental_s * per_file_ms:.2f}",
        "incremental speed-up (x)": f"{full_s / incremental_s:.1f}",
    }
    print_rows(rows)
    if args.update_readme:
        figures = (
            f"{len(sources)} files: parse {rows['parse files/s']} files/s, "
            f"{rows['parse MB/s']} MB/s; extract {rows['extract files/s']} files/s, "
            f"{rows['extract symbols/s']} symbols/s; 1-line edit reparse "
            f"{rows['reparse after 1-line edit, incremental ms/file']} ms vs full "
            f"{rows['reparse after 1-line edit, full ms/file']} ms "
            f"({rows['incremental speed-up (x)']}x)"
        )
        update_readme_row(
            f"parse {args.corpus}", f"python bench/parse.py --corpus {args.corpus}", figures
        )


if __name__ == "__main__":
    main()
