"""Does a project's own history find where an issue belongs? SWE-bench Lite issues of the
repositories whose full history is here (``fetch`` brings sympy and sphinx; django,
scikit-learn and matplotlib are over its size limit), each asked at its base commit with only
the commits reachable from that commit (none after it can leak in).

For each issue: patchstream's file ranking (``swebench_offline``'s offline index of the
snapshot at the base commit, the query service's search), the files of the similar past
changes (``query.similar_changes``: BM25 over the reachable commits' messages, each similar
commit's score shared among the files it changed), and the two fused by reciprocal rank with
a weight. Every choice (the weight, how many similar commits) is made leave one repository
out: chosen on the other repositories' issues, reported on the held-out one.

    python bench/swebench_history.py [--repos sympy sphinx] [--limit N]
        [--mirrors /work/.mirror] [--rankings PATH]

``--rankings`` keeps each issue's ranking (the slow part: parsing the snapshots) in a JSON
file, so that changing the history signal reruns in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from patchstream.config.settings import Settings
from patchstream.embedders.factory import create_embedder
from patchstream.parsing.file_roles import is_auxiliary
from patchstream.producers.git_history import read_history
from patchstream.query.question import file_name_index, named_files, named_in
from patchstream.query.similar_changes import ChangeHistory, PastChange, fuse
from patchstream.stores.vector.search_index import AUXILIARY_WEIGHT, FILE_WEIGHT, NAMED_WEIGHT
from search_offline import definers_of, ranked_files
from swebench_offline import ALLOWED, CachedBM25, LiveIndex, load_instances, snapshots

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
TOPS = (10, 25, 50, 100)
KS = (1, 5, 10)


def rankings(repo: str, args: argparse.Namespace) -> list[dict[str, object]]:
    """Each issue's files (the gold), patchstream's ranking and BM25's over code files."""
    instances = [i for i in load_instances() if i.repo == repo]
    if args.limit:
        instances = sorted(instances, key=lambda i: i.created_at)[: args.limit]
    embedder = create_embedder(Settings().embedding.model_copy(update={"kind": args.embedder}))
    live = LiveIndex(embedder)
    found = []
    for label, asked, files in snapshots(repo, instances, args):
        live.update(files)
        code_only = CachedBM25({p: t for p, t in live.terms.items() if not is_auxiliary(p)})
        assert live.index is not None
        for inst in asked:
            if not inst.files & set(live.sources):
                continue
            pointed = named_files(named_in(inst.question), definers_of(live.definers),
                                  file_name_index(live.sources))  # fmt: skip
            vector = embedder.embed([inst.question])[0]
            ours = ranked_files(live.index, vector, inst.question, pointed.files, NAMED_WEIGHT,
                                AUXILIARY_WEIGHT, FILE_WEIGHT, pointed.explicit)  # fmt: skip
            found.append({"id": inst.id, "base": inst.base_commit, "files": sorted(inst.files),
                          "question": inst.question, "ours": ours,
                          "bm25_code": code_only.rank(inst.question)[:60],
                          "present": sorted(live.sources)})  # fmt: skip
        print(f"  {repo} {label}: {len(live.sources)} files", flush=True)
    return found


def reachable(parents: dict[str, list[str]], head: str) -> set[str]:
    seen: set[str] = set()
    todo = [head] if head in parents else []
    while todo:
        sha = todo.pop()
        if sha not in seen:
            seen.add(sha)
            todo += [p for p in parents[sha] if p in parents and p not in seen]
    return seen


def hits(ranked: list[str], gold: set[str]) -> dict[int, bool]:
    return {k: bool(set(ranked[:k]) & gold) for k in KS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repos", nargs="+", default=["sympy", "sphinx"])
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--mirrors", default="/work/.mirror")
    parser.add_argument("--sdists", default=str(Path.home() / ".cache/patchstream-bench/sdists"))
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--rankings", type=Path, default=None)
    args = parser.parse_args()
    print(f"SWE-bench Lite with history ({', '.join(args.repos)}); embedder {args.embedder}; "
          f"weights {WEIGHTS}; similar commits {TOPS}; machine {machine()}",
          flush=True)  # fmt: skip
    kept = json.loads(args.rankings.read_text()) if args.rankings and args.rankings.exists() else {}
    # repo -> [(issue, {(weight, top): ranking})]
    results: dict[str, list[tuple[dict[str, object], dict[tuple[float, int], list[str]]]]] = {}
    for short in args.repos:
        repo = next(r for r in ALLOWED if r.split("/")[1].startswith(short))
        if repo not in kept:
            started = time.monotonic()
            kept[repo] = rankings(repo, args)
            print(f"  {repo}: rankings in {time.monotonic() - started:.0f} s", flush=True)
            if args.rankings:
                args.rankings.write_text(json.dumps(kept))
        mirror = Path(args.mirrors) / repo.replace("/", "+") / "repo"
        started = time.monotonic()
        commits, _ = read_history(mirror, 1_000_000)
        parents = {c.info.sha: list(c.info.parents) for c in commits}
        history = ChangeHistory([PastChange(c.info.sha, c.message,
                                            tuple(ch.path for ch in c.info.changes))
                                 for c in commits])  # fmt: skip
        print(f"  {repo}: {len(commits)} commits read and indexed in "
              f"{time.monotonic() - started:.0f} s", flush=True)  # fmt: skip
        rows = []
        for issue in kept[repo]:
            base = str(issue["base"])
            allowed = history.mask(reachable(parents, base))
            present = set(issue["present"])  # type: ignore[arg-type]
            by_config = {}
            for top in TOPS:
                scores = history.file_scores(str(issue["question"]), allowed, top, present)
                for weight in WEIGHTS:
                    by_config[(weight, top)] = fuse(issue["ours"], scores, weight)  # type: ignore[arg-type]
            rows.append((issue, by_config))
        results[repo] = rows
    report(results)


def accuracy(rows: list, config: tuple[float, int]) -> dict[int, float]:  # type: ignore[type-arg]
    n = max(1, len(rows))
    return {k: sum(hits(by[config], set(issue["files"]))[k] for issue, by in rows) / n
            for k in KS}  # fmt: skip


def report(results: dict[str, list]) -> None:  # type: ignore[type-arg]
    configs = [(w, t) for w in WEIGHTS for t in TOPS]
    held: dict[str, tuple[tuple[float, int], dict[int, float]]] = {}
    for repo, rows in results.items():
        others = [row for other, r in results.items() if other != repo for row in r]
        if others:  # chosen on the other repositories' issues
            best = max(configs, key=lambda c: (sum(accuracy(others, c)[k] for k in (5, 10)),
                                               -c[0]))  # fmt: skip
        else:
            best = (0.0, TOPS[0])
        held[repo] = (best, accuracy(rows, best))
        base = accuracy(rows, (0.0, TOPS[0]))
        bm25 = {k: sum(bool(set(i["bm25_code"][:k]) & set(i["files"])) for i, _ in rows)
                   / max(1, len(rows)) for k in KS}  # fmt: skip
        print(
            f"{repo:<22} {len(rows):>3} issues | without history "
            + " ".join(f"@{k} {base[k]:.3f}" for k in KS)
            + f" | held out, with history (weight {best[0]}, {best[1]} commits) "
            + " ".join(f"@{k} {held[repo][1][k]:.3f}" for k in KS)
            + " | BM25 code files "
            + " ".join(f"@{k} {bm25[k]:.3f}" for k in KS)
        )
    for repo, rows in results.items():
        line = "  ".join(
            f"w{c[0]}/t{c[1]} " + "/".join(f"{v:.2f}" for v in accuracy(rows, c).values())
            for c in configs
        )
        print(f"  {repo} every setting (@1/@5/@10): {line}")
    if held:
        mean = {k: float(np.mean([h[1][k] for h in held.values()])) for k in KS}
        print("mean over held-out repositories: " + " ".join(f"@{k} {mean[k]:.3f}" for k in KS))


if __name__ == "__main__":
    main()
