"""Parse bench: files/s, MB/s, symbols/s on one core; full parse vs incremental reparse.

Corpus: a named corpus (``medium`` by default: scipy's source tree from PyPI; ``npm``: rxjs's
TypeScript sources). Incremental: each file gets a one-line edit in its middle and is
reparsed with the previous tree (``Tree.edit``) versus from scratch, both in this run.

    python bench/parse.py [--corpus medium] [--update-results]
    python bench/parse.py --pathological [--update-results]
    python bench/parse.py --languages [--update-results]

``--pathological`` times extraction (parse, queries, chunks) of generated worst cases at
growing sizes: Python calls nested ``g(g(g(...)))`` up to 5,000 deep (~20 KB), and a
TypeScript type of generics nested up to ~200 KB. Each should stay well under a second, and
time per byte should stay flat as the size doubles (linear, not quadratic or cubic).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    SOURCE_SUFFIXES,
    build_corpus,
    corpus_label,
    machine,
    npm_tree,
    print_rows,
    update_results_row,
)
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.incremental import IncrementalParser
from patchstream.parsing.languages import language_for_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="medium", choices=["small", "medium", "large", "npm"])
    parser.add_argument("--update-results", action="store_true")
    parser.add_argument("--pathological", action="store_true",
                        help="time generated worst cases instead of a corpus")  # fmt: skip
    parser.add_argument("--languages", nargs="?", const="all", default=None,
                        help="extraction lines/s of each newer language against Python's, "
                        "in one run (or of those named: c,cpp,csharp,kotlin,scala,php,ruby,rust)",
                        )  # fmt: skip
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as stated
    if args.pathological:
        pathological(args.update_results)
        return
    if args.languages:
        per_language(args.update_results, args.languages)
        return
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
    if args.update_results:
        figures = (
            f"{len(sources)} files: parse {rows['parse files/s']} files/s, "
            f"{rows['parse MB/s']} MB/s; extract {rows['extract files/s']} files/s, "
            f"{rows['extract symbols/s']} symbols/s; 1-line edit reparse "
            f"{rows['reparse after 1-line edit, incremental ms/file']} ms vs full "
            f"{rows['reparse after 1-line edit, full ms/file']} ms "
            f"({rows['incremental speed-up (x)']}x)"
        )
        update_results_row(
            f"parse {args.corpus}", f"python bench/parse.py --corpus {args.corpus}", figures
        )


def _nested_calls(depth: int) -> tuple[str, bytes]:
    code = "def outer():\n    return " + "g(" * depth + "1" + ")" * depth
    return "calls.py", (code + "\n\n\ndef g(x):\n    return x\n").encode()


def _nested_generics(depth: int) -> tuple[str, bytes]:
    return "gen.ts", ("let x: " + "Aa<" * depth + "B" + ">" * depth + " = f();\n").encode()


def pathological(update_results: bool) -> None:
    """Extraction of worst cases at doubling sizes, one core (see the module docstring)."""
    print(f"generated worst cases; machine: {machine()}; 1 core; default parsing settings")
    for warm in (_nested_calls(10), _nested_generics(10)):  # grammars and tiktoken load once
        FileStateBuilder().build(FileRef("t", "bench", "main", warm[0], 1), warm[1])
    rows: dict[str, str] = {}
    summary = []
    cases = (("nested calls", _nested_calls, (1250, 2500, 5000)),
             ("nested generics", _nested_generics, (12_500, 25_000, 50_000)))  # fmt: skip
    for name, make, depths in cases:
        timed = []  # (bytes, seconds)
        for depth in depths:
            path, data = make(depth)
            builder = FileStateBuilder()  # a fresh one: no cached tree
            started = time.perf_counter()
            state = builder.build(FileRef("t", "bench", "main", path, 1), data)
            seconds = time.perf_counter() - started
            timed.append((len(data), seconds))
            flags = "timed out" if state.flags.parse_timeout else "complete"
            rows[f"{name}, depth {depth} ({len(data) / 1000:.0f} KB) s"] = (
                f"{seconds:.3f} ({flags}, {len(state.symbols)} symbols, {len(state.edges)} edges)"
            )
        (small, small_s), (large, large_s) = timed[0], timed[-1]
        growth = (large_s / large) / (small_s / small)
        rows[f"{name}: time per byte, largest / smallest"] = f"{growth:.2f}"
        summary.append(f"{name} {large / 1000:.0f} KB {large_s:.3f} s, time per byte "
                       f"x{growth:.2f} at {large / small:.0f}x the size")  # fmt: skip
    print_rows(rows)
    if update_results:
        update_results_row("parse pathological", "python bench/parse.py --pathological",
                          "; ".join(summary))  # fmt: skip


def per_language(update: bool, chosen: str = "all") -> None:
    """Full extraction (parse, queries, chunks) per line, each language's real corpus against
    Python's (requests, click and attrs, installed here) on the same core in the same run:
    the issue's bar is within 2x of Python's per line."""
    from _c_reference import C_CORPORA, c_tree
    from _common import package_tree
    from _cpp_reference import CPP_CORPORA, cpp_tree
    from _csharp_reference import CSHARP_CORPORA, csharp_tree
    from _dynamic_reference import PHP_CORPORA, RUBY_CORPORA, source_files, traced_tree
    from _kotlin_reference import KOTLIN_CORPORA, SCALA_CORPORA, kotlin_tree
    from _rust_reference import RUST_CORPORA, rust_tree
    from _swift_reference import swift_tree
    from _ts_reference import JS_CORPORA

    def traced_sources(corpora: dict[str, Any], names: tuple[str, ...]) -> list[Path]:
        trees = [(traced_tree(corpora[name]), corpora[name]) for name in names]
        return [path for tree, corpus in trees for path in source_files(corpus, tree)]

    wanted = {"python", *chosen.split(",")} if chosen != "all" else None
    makers: dict[str, Callable[[], list[Path]]] = {
        "python (requests, click, attr)": lambda: [
            f for name in ("requests", "click", "attr")
            for f in sorted(package_tree(name).rglob("*.py"))
        ],
        "c (lua, zlib)": lambda: [
            f for name in ("lua", "zlib") for f in sorted(c_tree(C_CORPORA[name]).rglob("*"))
            if f.suffix in (".c", ".h")
        ],
        "c++ (leveldb, yaml-cpp)": lambda: [
            f for name in ("leveldb", "yaml-cpp")
            for f in sorted(cpp_tree(CPP_CORPORA[name]).rglob("*"))
            if f.suffix in (".cc", ".cpp", ".h", ".hpp")
        ],
        "c# (dnlib, dbus-sharp)": lambda: [
            f for name in ("dnlib", "dbus-sharp")
            for f in sorted(csharp_tree(CSHARP_CORPORA[name]).rglob("*.cs"))
        ],
        "kotlin (clikt, kotlinpoet)": lambda: [
            f for name in ("clikt", "kotlinpoet")
            for f in sorted(kotlin_tree(KOTLIN_CORPORA[name]).rglob("*.kt"))
        ],
        "scala (scala-swing, parser-combinators)": lambda: [
            f for name in ("scala-swing", "parser-combinators")
            for f in sorted(kotlin_tree(SCALA_CORPORA[name]).rglob("*.scala"))
        ],
        "php (php-parser, symfony-yaml)": lambda: traced_sources(
            PHP_CORPORA, ("php-parser", "symfony-yaml")),
        "ruby (liquid, rake)": lambda: traced_sources(RUBY_CORPORA, ("liquid", "rake")),
        "swift (swift-argument-parser)": lambda: sorted(swift_tree().rglob("*.swift")),
        "rust (regex-syntax, regex-automata; generated tables left out)": lambda: [
            f for name in ("regex-syntax", "regex-automata")
            for f in sorted(rust_tree(RUST_CORPORA[name]).rglob("*.rs"))
            if "unicode_tables" not in f.parts
        ],
        "javascript (eslint, mocha)": lambda: [
            f for name in ("eslint", "mocha")
            for f in sorted(npm_tree(JS_CORPORA[name].spec).rglob("*.js"))
        ],
    }  # fmt: skip
    corpora = {label: make() for label, make in makers.items()
               if wanted is None or label.split(" (")[0].replace("c++", "cpp")
               .replace("c#", "csharp") in wanted}  # fmt: skip
    print(f"machine: {machine()}; 1 core; each corpus extracted twice, the second timed")
    rows, rates = {}, {}
    for label, files in corpora.items():
        sources = [(f.name, f.read_bytes()) for f in files]
        lines = sum(data.count(b"\n") for _, data in sources)
        builder = FileStateBuilder()
        for _pass in (False, True):  # the first pass warms caches and the grammar
            started = time.perf_counter()
            for i, (name, data) in enumerate(sources):
                builder.build(FileRef("t", "bench", "main", f"{i}/{name}", 1), data)
            seconds = time.perf_counter() - started
        rates[label] = lines / seconds
        rows[label] = f"{len(sources)} files, {lines} lines: {rates[label]:.0f} lines/s"
    base = rates["python (requests, click, attr)"]
    for label, rate in rates.items():
        rows[label] += f" ({rate / base:.2f}x Python's)"
    print_rows(rows)
    if update:
        named = "" if chosen == "all" else f" {chosen}"
        update_results_row(f"parse per language{named}",
                           f"python bench/parse.py --languages{named}",
                           "; ".join(f"{k}: {v}" for k, v in rows.items()))  # fmt: skip


if __name__ == "__main__":
    main()
