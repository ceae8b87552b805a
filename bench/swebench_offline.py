"""Search ranking on SWE-bench Lite issues, without a stack: each issue's problem statement
(as an agent would paste it) asked of the query service's in-memory index (``TenantIndex``,
fed the chunks the parse stage makes, with the graph's named-file list), against a plain
file BM25 over the same files in the same run.

Only the django, sympy, matplotlib, scikit-learn and sphinx instances are used (253 of 300):
the other seven repositories are kept for an independent check. The set
(``localization/swebench/instances.json``: id, repository, base commit, version, problem
statement and the files the gold patch changes) is cut from a public JSON copy of SWE-bench
Lite (MIT) by ``--make-set``.

Each issue is asked of its repository at its base commit where the repository's history is
here (``fetch`` brings sympy and sphinx; django, scikit-learn and matplotlib are larger than a
fetch may be). For those three the code is the PyPI sdist of the release *before* the
instance's version (its base commit lies between that release and the next, so the fix is
never in it); an issue whose changed files that release lacks is left out and counted.
Successive snapshots of a repository update the index by the files that differ, as overlays
would.

    python bench/swebench_offline.py [--repos sympy sphinx django ...] [--limit N]
        [--mirrors /work/.mirror] [--sdists ~/.cache/patchstream-bench/sdists]
    python bench/swebench_offline.py --make-set SWE_BENCH_LITE.json

Prints, per repository and in total: file accuracy@1/5/10 for patchstream, for BM25 over the
same files and for BM25 over the code files only (no tests, docs or examples: the stronger
baseline), test and doc files in patchstream's top 10, and the issues left out.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, update_results_row
from _rank_features import question_features
from context_quality import FileBM25
from patchstream.config.settings import Settings
from patchstream.embedders.base import Embedder
from patchstream.embedders.factory import create_embedder
from patchstream.parsing.file_roles import is_auxiliary
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.indexable import SKIP_DIRS, SKIP_NAMES, SKIP_SUFFIXES
from patchstream.parsing.tokens import TokenCounter
from patchstream.query.question import MAX_NAMES, file_name_index, named_files, named_in
from patchstream.stores.vector.file_ranker import module_parts, shipped_ranker
from patchstream.stores.vector.search_index import (
    AUXILIARY_WEIGHT,
    FILE_WEIGHT,
    MAX_DF_SHARE,
    NAMED_WEIGHT,
    ROWS_PER_FILE,
    TenantIndex,
)
from patchstream.stores.vector.search_text import tokens
from search_offline import SCOPE, context_code, definers_of, indexed_row, ranked_files

SET = Path(__file__).resolve().parent / "localization" / "swebench" / "instances.json"
ALLOWED = ("django/django", "sympy/sympy", "matplotlib/matplotlib",
           "scikit-learn/scikit-learn", "sphinx-doc/sphinx")  # fmt: skip
# Repository -> (PyPI name, releases before each instance version), for those not fetched.
SDISTS = {
    "django/django": ("Django", {"3.0": "2.2", "3.1": "3.0", "3.2": "3.1", "4.0": "3.2",
                                 "4.1": "4.0", "4.2": "4.1", "5.0": "4.2"}),
    "scikit-learn/scikit-learn": ("scikit-learn", {"0.20": "0.19.0", "0.21": "0.20.0",
                                                   "0.22": "0.21.0", "1.3": "1.2.0"}),
    "matplotlib/matplotlib": ("matplotlib", {"3.3": "3.2.0", "3.5": "3.4.0", "3.6": "3.5.0",
                                             "3.7": "3.6.0"}),
}  # fmt: skip
_CHANGED = re.compile(r"^diff --git a/(\S+) b/", re.M)
_MAX_BYTES = 1_000_000


@dataclass
class Instance:
    id: str
    repo: str
    base_commit: str
    version: str
    created_at: str
    question: str
    files: set[str]


_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w, ]+)|import\s+([\w.]+))", re.M)


def imported_by(sources: dict[str, str]) -> dict[str, int]:
    """Path -> how many Python files import its module (absolute and relative imports,
    ``from package import module`` included), read from the sources by pattern."""
    modules = {".".join(module_parts(p)): p for p in sources if p.endswith(".py")}
    counts: Counter[str] = Counter()
    for path, text in sources.items():
        if not path.endswith(".py"):
            continue
        package = list(module_parts(path))
        if not path.endswith("__init__.py"):
            package = package[:-1]
        seen: set[str] = set()
        for source, names, plain in _IMPORT.findall(text):
            if plain:
                targets = [plain]
            else:
                dots = len(source) - len(source.lstrip("."))
                base = source.lstrip(".")
                if dots:
                    root = package[: len(package) - dots + 1] if dots > 1 else package
                    base = ".".join([*root, base] if base else root)
                targets = [base, *(f"{base}.{n.strip()}" for n in names.split(",") if n.strip())]
            for target in targets:
                if target in modules and modules[target] != path:
                    seen.add(modules[target])
        counts.update(seen)
    return dict(counts)


def make_set(source: Path) -> None:
    rows = json.loads(source.read_text(encoding="utf-8"))
    kept = [{"instance_id": r["instance_id"], "repo": r["repo"], "base_commit": r["base_commit"],
             "version": r["version"], "created_at": r["created_at"],
             "problem_statement": r["problem_statement"],
             "files": sorted(set(_CHANGED.findall(r["patch"])))}
            for r in rows if r["repo"] in ALLOWED]  # fmt: skip
    SET.parent.mkdir(parents=True, exist_ok=True)
    meta = {"source": "SWE-bench Lite, test split (princeton-nlp/SWE-bench_Lite, MIT)",
            "repos": list(ALLOWED), "instances": kept}  # fmt: skip
    SET.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(f"{len(kept)} instances written to {SET}")


def load_instances() -> list[Instance]:
    meta = json.loads(SET.read_text(encoding="utf-8"))
    return [Instance(r["instance_id"], r["repo"], r["base_commit"], r["version"],
                     r["created_at"], r["problem_statement"], set(r["files"]))
            for r in meta["instances"]]  # fmt: skip


def indexable(path: str) -> bool:
    """What ``patchstream index`` would take by name (``producers.tree_scan``)."""
    parts = path.split("/")
    name = parts[-1]
    return not (any(p in SKIP_DIRS for p in parts[:-1]) or name in SKIP_NAMES
                or name.lower().endswith(SKIP_SUFFIXES))  # fmt: skip


def git_snapshot(git_dir: Path, commit: str) -> dict[str, bytes]:
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--end-of-options", commit],
        capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")  # fmt: skip
    blobs = {}
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "blob" and indexable(path):
            blobs[sha] = path
    batch = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha in blobs).encode(), capture_output=True, check=True,
    ).stdout  # fmt: skip
    files: dict[str, bytes] = {}
    at = 0
    for path in blobs.values():
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        body = batch[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        if size <= _MAX_BYTES and b"\0" not in body[:8192]:
            files[path] = body
    return files


def sdist_snapshot(cache: Path, package: str, version: str) -> dict[str, bytes]:
    """The files of ``package``'s sdist at ``version`` (the earliest release of that minor
    with an sdist when ``version`` has none), fetched once from PyPI's JSON index."""
    cache.mkdir(parents=True, exist_ok=True)
    archive_path = next(iter(sorted(cache.glob(f"{package}-{version}*.tar.gz"))), None)
    if archive_path is None:
        archive_path = _download_sdist(cache, package, version)
    files: dict[str, bytes] = {}
    with tarfile.open(archive_path) as archive:
        for member in archive.getmembers():
            path = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not member.isfile() or not path or not indexable(path):
                continue
            if member.size > _MAX_BYTES:
                continue
            body = archive.extractfile(member)
            data = body.read() if body else b""
            if b"\0" not in data[:8192]:
                files[path] = data
    return files


def _download_sdist(cache: Path, package: str, version: str) -> Path:
    import hashlib

    import httpx

    index = httpx.get(f"https://pypi.org/simple/{package}/", timeout=60, follow_redirects=True,
                      headers={"Accept": "application/vnd.pypi.simple.v1+json"}).json()  # fmt: skip
    minor = ".".join(version.split(".")[:2])
    pattern = re.compile(rf"{re.escape(package)}-({re.escape(minor)}(\.\d+)?)\.tar\.gz",
                         re.IGNORECASE)  # fmt: skip
    candidates = []
    for entry in index["files"]:
        match = pattern.fullmatch(entry["filename"])
        if match:
            candidates.append((tuple(int(x) for x in match.group(1).split(".")), entry))
    if not candidates:
        raise RuntimeError(f"no sdist of {package} {minor}.x on PyPI")
    _, entry = min(candidates, key=lambda c: c[0])
    data = httpx.get(entry["url"], timeout=300, follow_redirects=True).content
    if hashlib.sha256(data).hexdigest() != entry["hashes"].get("sha256"):
        raise RuntimeError(f"{entry['filename']}: sha256 differs from PyPI's")
    target = cache / entry["filename"]
    target.write_bytes(data)
    return target


BUDGETS = (4000, 8000)  # context budgets whose answers are checked for the changed files' code


class CachedBM25(FileBM25):
    """The baseline over files whose term counts were counted once (snapshots share most)."""

    def __init__(self, terms: dict[str, Counter[str]]) -> None:
        self.paths = list(terms)
        self.terms = list(terms.values())
        self.lengths = [sum(t.values()) for t in self.terms]
        self.average = sum(self.lengths) / max(1, len(self.lengths))
        self.df: Counter[str] = Counter(w for t in self.terms for w in t)
        self.k1, self.b = 1.5, 0.75


@dataclass
class LiveIndex:
    """The index of one repository, updated snapshot by snapshot by the files that differ."""

    embedder: Embedder
    builder: FileStateBuilder = field(default_factory=FileStateBuilder)
    index: TenantIndex | None = None
    held: dict[str, tuple[bytes, list[str], set[str]]] = field(default_factory=dict)
    definers: dict[str, set[str]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    terms: dict[str, Counter[str]] = field(default_factory=dict)

    def update(self, files: dict[str, bytes]) -> int:
        if self.index is None:
            self.index = TenantIndex(self.embedder.dim)
        changed = 0
        for path in [p for p in self.held if p not in files or files[p] != self.held[p][0]]:
            _, pks, names = self.held.pop(path)
            for pk in pks:
                self.index.remove(pk)
            for name in names:
                self.definers.get(name, set()).discard(path)
            self.sources.pop(path, None)
            self.terms.pop(path, None)
        for path, data in files.items():
            if path in self.held:
                continue
            changed += 1
            state = self.builder.build(FileRef("t", "set", "main", path, 1), data)
            vectors = self.embedder.embed([c.text for c in state.chunks]) if state.chunks else []
            for chunk, dense in zip(state.chunks, vectors, strict=True):
                self.index.add(indexed_row(chunk, dense))
            names = {n for s in state.symbols for n in (s.name, s.qualified_name)}
            for name in names:
                self.definers.setdefault(name, set()).add(path)
            self.held[path] = (data, [f"{path}#{c.id}" for c in state.chunks], names)
            if state.chunks:
                self.sources[path] = data.decode("utf-8", "replace")
                self.terms[path] = Counter(tokens(self.sources[path]))
        return changed


@dataclass
class Tally:
    n: int = 0
    ours: dict[int, int] = field(default_factory=lambda: {1: 0, 5: 0, 10: 0})
    bm25: dict[int, int] = field(default_factory=lambda: {1: 0, 5: 0, 10: 0})
    bm25_code: dict[int, int] = field(default_factory=lambda: {1: 0, 5: 0, 10: 0})
    aux: int = 0
    left_out: int = 0
    search_ms: list[float] = field(default_factory=list)  # question in -> ranked files out
    fused_ms: list[float] = field(default_factory=list)  # the same, fused order (with a ranker)
    # budget -> issues whose context held a changed file's code, and the tokens used
    context: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    used: dict[int, list[int]] = field(default_factory=lambda: {b: [] for b in BUDGETS})

    def add(self, other: Tally) -> None:
        self.n += other.n
        for budget in BUDGETS:
            self.context[budget] += other.context[budget]
            self.used[budget] += other.used[budget]
        self.aux += other.aux
        self.left_out += other.left_out
        self.search_ms += other.search_ms
        self.fused_ms += other.fused_ms
        for k in self.ours:
            self.ours[k] += other.ours[k]
            self.bm25[k] += other.bm25[k]
            self.bm25_code[k] += other.bm25_code[k]

    def line(self, name: str) -> str:
        n = max(1, self.n)
        return (f"{name:<26} {self.n:>4} issues ({self.left_out} left out) | patchstream "
                + " ".join(f"@{k} {self.ours[k] / n:.3f}" for k in self.ours)
                + f" tests/docs@10 {self.aux / n:.2f} | BM25 "
                + " ".join(f"@{k} {self.bm25[k] / n:.3f}" for k in self.bm25)
                + " | BM25 code files "
                + " ".join(f"@{k} {self.bm25_code[k] / n:.3f}" for k in self.bm25)
                + f" | search ms p50/p99 {_percentile(self.search_ms, 50):.0f}/"
                f"{_percentile(self.search_ms, 99):.0f}"
                + (f" (fused order alone, same questions: {_percentile(self.fused_ms, 50):.0f}/"
                   f"{_percentile(self.fused_ms, 99):.0f})" if self.fused_ms else "")
                + " | context code "
                + " ".join(f"{b // 1000}k {self.context[b] / n:.3f}" for b in BUDGETS)
                + " (tokens used, mean: "
                + ", ".join(f"{np.mean(self.used[b] or [0]):.0f}" for b in BUDGETS)
                + ")")  # fmt: skip


def _percentile(values: list[float], q: int) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def snapshots(repo: str, group: list[Instance], args: argparse.Namespace) -> Iterator[
    tuple[str, list[Instance], dict[str, bytes]]
]:  # fmt: skip
    """(label, the instances asked of it, files) in time order."""
    if repo in SDISTS:
        package, before = SDISTS[repo]
        by_release: dict[str, list[Instance]] = {}
        for inst in group:
            by_release.setdefault(before[inst.version], []).append(inst)
        for release in sorted(by_release, key=lambda v: tuple(int(x) for x in v.split("."))):
            try:
                files = sdist_snapshot(Path(args.sdists), package, release)
            except Exception as exc:
                print(f"  {repo} {release}: no sdist ({exc}); its issues are left out",
                      flush=True)  # fmt: skip
                files = {}
            yield f"{package} {release} (sdist)", by_release[release], files
        return
    git_dir = Path(args.mirrors) / f"{repo.replace('/', '+')}" / "repo"
    for inst in sorted(group, key=lambda i: i.created_at):
        yield inst.base_commit[:12], [inst], git_snapshot(git_dir, inst.base_commit)


# (named weight, auxiliary weight, file weight, the share of rows past which a word is left out)
Config = tuple[float, float, float, float]


def run_repo(
    repo: str, group: list[Instance], args: argparse.Namespace, configs: list[Config]
) -> dict[Config, Tally]:
    """Each configuration asked of the same index (built once per snapshot)."""
    embedder = create_embedder(Settings().embedding.model_copy(update={"kind": args.embedder}))
    live = LiveIndex(embedder)
    tallies = {config: Tally() for config in configs}
    settings = Settings()
    counter, wanted = TokenCounter(settings.parsing.token_encoding), settings.query
    ranker = shipped_ranker() if args.ranker == "shipped" else None
    for label, asked, files in snapshots(repo, group, args):
        started = time.monotonic()
        changed = live.update(files)
        # As the query service does with a loaded copy (``freeze_loaded_copy``): the index's
        # objects leave the collector's generations, so a full collection during a timed
        # search does not walk them (a sympy snapshot's heap made single searches 250 ms).
        gc.collect()
        gc.freeze()
        imported = imported_by(live.sources) if args.features is not None else {}
        baseline = CachedBM25(live.terms)
        code_only = CachedBM25({p: t for p, t in live.terms.items() if not is_auxiliary(p)})
        assert live.index is not None
        for inst in asked:
            if not inst.files & set(live.sources):
                for tally in tallies.values():
                    tally.left_out += 1
                continue
            began = time.perf_counter()
            pointed = named_files(named_in(inst.question, args.max_names, args.names_by_position),
                                  definers_of(live.definers),
                                  file_name_index(live.sources))  # fmt: skip
            named = pointed.files
            explicit = None if args.exempt_all_named else pointed.explicit
            vector = embedder.embed([inst.question])[0]
            asked_ms = (time.perf_counter() - began) * 1000
            theirs = baseline.rank(inst.question)
            code_ranked = code_only.rank(inst.question)
            for config, tally in tallies.items():
                named_weight, auxiliary_weight, file_weight, df_share = config
                began = time.perf_counter()
                ours = ranked_files(live.index, vector, inst.question, named, named_weight,
                                    auxiliary_weight, file_weight, explicit,
                                    args.rows_per_file, df_share, ranker,
                                    pointed.weights)  # fmt: skip
                tally.search_ms.append(asked_ms + (time.perf_counter() - began) * 1000)
                if ranker is not None:  # the same question in fused order, for the cost
                    began = time.perf_counter()
                    ranked_files(live.index, vector, inst.question, named, named_weight,
                                 auxiliary_weight, file_weight, explicit, args.rows_per_file,
                                 df_share)  # fmt: skip
                    tally.fused_ms.append(asked_ms + (time.perf_counter() - began) * 1000)
                tally.n += 1
                if args.dump is not None:
                    with args.dump.open("a", encoding="utf-8") as dump:
                        dump.write(json.dumps({"id": inst.id, "config": [named_weight,
                            auxiliary_weight, file_weight], "files": sorted(inst.files),
                            "df_share": df_share,
                            "ours": ours[:10], "bm25_code": code_ranked[:10],
                            "named": named[:10]}) + "\n")  # fmt: skip
                tally.aux += sum(is_auxiliary(f) for f in ours[:10])
                if config == configs[0] and args.features is not None:
                    candidates = question_features(live.index, SCOPE, inst.question, vector,
                                                   pointed, imported)  # fmt: skip
                    with args.features.open("a", encoding="utf-8") as out:
                        out.write(json.dumps({"id": inst.id, "repo": repo,
                                              "files": sorted(inst.files),
                                              "candidates": candidates}) + "\n")  # fmt: skip
                if config == configs[0] and not args.no_context:
                    for budget in BUDGETS:
                        held, used = context_code(live.index, vector, inst.question, named,
                                                  explicit,
                                                  budget, counter, wanted,
                                                  args.rows_per_file, ranker,
                                                  pointed.weights)  # fmt: skip
                        tally.context[budget] += bool(held & inst.files)
                        tally.used[budget].append(used)
                for k in tally.ours:
                    tally.ours[k] += bool(set(ours[:k]) & inst.files)
                    tally.bm25[k] += bool(set(theirs[:k]) & inst.files)
                    tally.bm25_code[k] += bool(set(code_ranked[:k]) & inst.files)
        print(f"  {repo} {label}: {len(live.sources)} files, {changed} parsed, "
              f"{time.monotonic() - started:.1f}s", flush=True)  # fmt: skip
    return tallies


def print_held_out(by_repo: dict[str, dict[Config, Tally]]) -> None:
    """Leave one repository out: for each, the setting with the best pooled @5 + @10 on the
    others (ties: the first listed), and its figures on the one left out."""
    pooled = Tally()
    for held in by_repo:
        scores: dict[Config, float] = {}
        for config in next(iter(by_repo.values())):
            rest = Tally()
            for repo, tallies in by_repo.items():
                if repo != held:
                    rest.add(tallies[config])
            scores[config] = (rest.ours[5] + rest.ours[10]) / max(1, rest.n)
        chosen = max(scores, key=lambda c: scores[c])  # the first of equals
        tally = by_repo[held][chosen]
        pooled.add(tally)
        n = max(1, tally.n)
        print(f"held out {held}: chose {list(chosen)}; " + " ".join(
            f"@{k} {tally.ours[k] / n:.3f}" for k in tally.ours))  # fmt: skip
    n = max(1, pooled.n)
    print("held out, pooled: " + " ".join(f"@{k} {pooled.ours[k] / n:.3f}" for k in pooled.ours))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--make-set", type=Path, default=None)
    parser.add_argument("--repos", nargs="+", default=["sympy", "sphinx", "django",
                                                       "scikit-learn", "matplotlib"])  # fmt: skip
    parser.add_argument("--limit", type=int, default=0, help="issues per repository (0: all)")
    parser.add_argument("--mirrors", default="/work/.mirror")
    parser.add_argument("--sdists", default=str(Path.home() / ".cache/patchstream-bench/sdists"))
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--update-results", action="store_true",
                        help="write the first setting's figures to docs/benchmarks")  # fmt: skip
    parser.add_argument("--named-weights", type=float, nargs="+", default=[NAMED_WEIGHT])
    parser.add_argument("--auxiliary-weights", type=float, nargs="+",
                        default=[AUXILIARY_WEIGHT])  # fmt: skip
    parser.add_argument("--file-weights", type=float, nargs="+", default=[FILE_WEIGHT])
    parser.add_argument("--max-df-shares", type=float, nargs="+", default=[MAX_DF_SHARE],
                        help="words in more than this share of the rows are left out")  # fmt: skip
    parser.add_argument(
        "--exempt-all-named",
        action="store_true",
        help="no demotion for a test any named name leads to (before 12-02)",
    )
    parser.add_argument("--rows-per-file", type=int, default=ROWS_PER_FILE,
                        help="rows of one file before the next files' (0: no cap)")  # fmt: skip
    parser.add_argument("--dump", type=Path, default=None,
                        help="append each issue's top files as JSON lines")  # fmt: skip
    parser.add_argument("--features", type=Path, default=None,
                        help="append each issue's candidate files' ranking features (JSON "
                             "lines, for learn_ranker.py)")  # fmt: skip
    parser.add_argument("--max-names", type=int, default=MAX_NAMES,
                        help="names read from a question (named_in)")  # fmt: skip
    parser.add_argument("--names-by-position", action="store_true",
                        help="a question's names in the order they appear")  # fmt: skip
    parser.add_argument("--ranker", choices=("shipped", "none"), default="shipped",
                        help="order files by the shipped learned ranker")  # fmt: skip
    parser.add_argument("--no-context", action="store_true",
                        help="skip the context budgets' check (faster)")  # fmt: skip
    args = parser.parse_args()
    if args.make_set:
        make_set(args.make_set)
        return
    configs = [(n, a, f, d) for n in args.named_weights for a in args.auxiliary_weights
               for f in args.file_weights for d in args.max_df_shares]  # fmt: skip
    print(f"SWE-bench Lite ({', '.join(args.repos)}); embedder {args.embedder}; (named "
          f"weight, auxiliary weight, file weight, max df share) {configs}; machine "
          f"{machine()}", flush=True)  # fmt: skip
    instances = load_instances()
    totals = {config: Tally() for config in configs}
    lines: dict[Config, list[str]] = {config: [] for config in configs}
    by_repo: dict[str, dict[Config, Tally]] = {}
    for short in args.repos:
        repo = next(r for r in ALLOWED if r.split("/")[1].startswith(short))
        group = [i for i in instances if i.repo == repo]
        if args.limit:
            group = sorted(group, key=lambda i: i.created_at)[: args.limit]
        by_repo[repo] = run_repo(repo, group, args, configs)
        for config, tally in by_repo[repo].items():
            lines[config].append(tally.line(repo))
            totals[config].add(tally)
            print(f"  {list(config)} {lines[config][-1]}", flush=True)
    for config in configs:
        print(f"named weight {config[0]}, auxiliary weight {config[1]}, file weight "
              f"{config[2]}, max df share {config[3]}:")  # fmt: skip
        for line in [*lines[config], totals[config].line("all")]:
            print("  " + line)
    if len(by_repo) > 1 and len(configs) > 1:
        print_held_out(by_repo)
    if args.update_results:
        first = configs[0]
        figures = "; ".join(
            [
                f"{args.embedder} embedder, named weight {first[0]}, auxiliary weight {first[1]}",
                *lines[first],
                totals[first].line("all"),
            ]
        )
        update_results_row("search swe-bench lite", "python bench/swebench_offline.py",
                           " ".join(figures.split()))  # fmt: skip


if __name__ == "__main__":
    main()
