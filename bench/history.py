"""History bench: a large project's history through the stack, and a pushed commit's way to
``query history``.

On a checkout of a fetched repository (sympy: 62,658 commits; sphinx: 22,413), with the code
indexed first (``--commits 0``, not timed here):

- cold history ingest: ``index --commits N`` publishes N commit pages and the head; the time
  until both tiers applied them, the graph's memory (FalkorDB ``used_memory``) and the vector
  store's files before and after, and the stack's peak memory (summed over its processes,
  sampled every 0.5 s);
- a pushed commit: a commit made in the checkout and a signed GitHub push webhook to the
  stack's gateway, then ``/v1/history`` of the changed file polled every 20 ms until the
  commit heads it (webhook -> fetch -> events -> parse -> graph -> read), ``--pushes`` times;
- ``/v1/history`` of files of the corpus: p50/p99 (each distinct head's first read walks the
  commit graph once; later reads use the cached walk);
- search and context 8k with issue text (``bench/query.py``'s 100 SWE-bench Lite problem
  statements), p50/p95/p99 through the HTTP API, before the history ingest and after it in
  the same run (the search copy loaded and the vector tier settled each time).

    python bench/history.py [--repo sympy] [--commits 30000] [--pushes 20] [--requests 100]
        [--mirrors /work/.mirror] [--update-results]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import StackMemory, machine, print_rows, stack_settings, update_results_row
from patchstream.config.settings import GatewaySettings, QuerySettings
from patchstream.embedded.services import free_port
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from pipeline import percentile
from query import issue_queries, settle, timed, wait_for_search_copy

SECRET = "bench-secret"
KEY = "bench-key"


def git(root: Path, *args: str) -> str:
    command = ["git", "-C", str(root), "-c", "user.name=Bench", "-c", "user.email=b@example.com",
               *args]  # fmt: skip
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def du_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def graph_mib(supervisor: Supervisor) -> float:
    import redis

    graph = supervisor.settings.graph
    password = graph.falkordb_password.get_secret_value() if graph.falkordb_password else None
    client = redis.Redis(host=graph.falkordb_host, port=graph.falkordb_port, password=password)
    try:
        return float(client.info("memory")["used_memory"]) / 2**20
    finally:
        client.close()


def push(settings: object, root: Path, before: str, after: str, delivery: str) -> None:
    body = json.dumps({
        "ref": "refs/heads/main", "before": before, "after": after, "created": False,
        "deleted": False, "forced": False,
        "repository": {"full_name": "bench/corpus", "clone_url": f"file://{root}"},
        "pusher": {"name": "bench"}, "commits": [], "head_commit": None,
    }).encode()  # fmt: skip
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    answer = httpx.post(f"{settings.gateway.url}/webhooks/github", content=body,  # type: ignore[attr-defined]
                        headers={"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery,
                                 "X-Hub-Signature-256": signature,
                                 "Content-Type": "application/json"}, timeout=60)  # fmt: skip
    answer.raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repo", default="sympy")
    parser.add_argument("--commits", type=int, default=30_000)
    parser.add_argument("--pushes", type=int, default=20)
    parser.add_argument("--requests", type=int, default=100,
                        help="issue-text searches and contexts, each")  # fmt: skip
    parser.add_argument("--mirrors", default="/work/.mirror")
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    mirror = next(Path(args.mirrors).glob(f"*+{args.repo}/repo"))
    with tempfile.TemporaryDirectory(prefix="history-bench-") as tmp:
        root = Path(tmp) / "corpus"
        subprocess.run(["git", "clone", "-q", str(mirror), str(root)], check=True)
        total = int(git(root, "rev-list", "--count", "HEAD"))
        print(f"corpus {args.repo} ({total} commits at {git(root, 'rev-parse', 'HEAD')[:12]}); "
              f"{args.commits} commits ingested, {args.pushes} pushes; machine {machine()}",
              flush=True)  # fmt: skip
        config = Path(tmp) / "gateway.toml"
        config.write_text(f'[[repos]]\ntenant = "bench"\nname = "corpus"\n'
                          f'clone_url = "file://{root}"\nwebhook_secret = "{SECRET}"\n'
                          f'local_path = "{root}"\n')  # fmt: skip
        settings = stack_settings(
            Path(tmp), f"hist{int(time.time())}.",
            query=QuerySettings(port=free_port(), api_keys={KEY: "bench"}, rate_per_key=0),
            gateway=GatewaySettings(port=free_port(), config=str(config), rate_per_key=0,
                                    local_roots=[str(root.parent)]),
        )  # fmt: skip
        supervisor = Supervisor(settings)
        supervisor.start()
        try:
            rows = measure(supervisor, root, args)
        finally:
            supervisor.stop()
    print_rows(rows)
    if args.update_results:
        update_results_row(f"history ({args.repo})", "python bench/history.py",
                           "; ".join(f"{k} {v}" for k, v in rows.items()))  # fmt: skip


def measure(supervisor: Supervisor, root: Path, args: argparse.Namespace) -> dict[str, str]:
    settings = supervisor.settings
    code = asyncio.run(index_directory(settings, root, repo="corpus", tenant="bench",
                                       progress=False, commits=0, timeout_s=3600))  # fmt: skip
    assert code.complete, code
    client = httpx.Client(base_url=settings.query.url, timeout=60,
                          headers={"Authorization": f"Bearer {KEY}"})  # fmt: skip
    without, settled_before = query_latencies(supervisor, client, args.requests)
    milvus_dir = Path(settings.embedded.data_dir) / "milvus"
    before = (graph_mib(supervisor), du_mib(milvus_dir))
    memory = StackMemory(supervisor).start()
    started = time.monotonic()
    done = asyncio.run(index_directory(settings, root, repo="corpus", tenant="bench",
                                       progress=False, commits=args.commits,
                                       timeout_s=3600))  # fmt: skip
    ingest_s = time.monotonic() - started
    peak = memory.stop()
    assert done.complete, done
    after = (graph_mib(supervisor), du_mib(milvus_dir))
    ingest = (f"{done.commits} commits in {ingest_s:.0f} s ({done.commits / ingest_s:.0f}/s); "
              f"graph {before[0]:.0f} -> {after[0]:.0f} MiB, vector files {before[1]:.0f} -> "
              f"{after[1]:.0f} MiB; stack peak {peak:.0f} MiB")  # fmt: skip
    print(f"cold history ingest: {ingest}", flush=True)  # said now: the pushes come after
    with_history, settled_after = query_latencies(supervisor, client, args.requests)
    changed = set(git(root, "log", f"-{args.commits}", "--name-only", "--format=").split())
    files = [p for p in git(root, "ls-files", "*.py").splitlines() if p in changed][:2000]
    random.Random(3).shuffle(files)
    reads = []
    for path in files[:100]:
        began = time.perf_counter()
        client.get("/v1/history", params={"repo": "corpus", "target": path}).raise_for_status()
        reads.append((time.perf_counter() - began) * 1000)
    # Pushes: the first fetches the gateway's mirror (not timed).
    target = root / files[0]
    head = git(root, "rev-parse", "HEAD")
    latencies = []
    for i in range(args.pushes + 1):
        with target.open("a") as out:
            out.write(f"\n# bench push {i}\n")
        git(root, "commit", "-qm", f"bench push {i}", "--", files[0])
        after_sha = git(root, "rev-parse", "HEAD")
        began = time.monotonic()
        push(settings, root, head, after_sha, f"bench-{i}")
        while True:
            answer = client.get("/v1/history", params={"repo": "corpus", "target": files[0],
                                                        "limit": 1})  # fmt: skip
            commits = answer.json().get("commits") if answer.status_code == 200 else None
            if commits and commits[0]["sha"] == after_sha:  # the file's newest commit
                break
            if time.monotonic() - began > 120:
                raise SystemExit(f"push {i} not visible in 120 s")
            time.sleep(0.02)
        if i:
            latencies.append(time.monotonic() - began)
        head = after_sha
    client.close()
    queries = {
        f"{name} ms p50/p95/p99 without history / with history": f"{without[name]} / {found}"
        for name, found in with_history.items()
    }
    return {
        "cold history ingest": ingest,
        "stack settled before the queries, without / with history": f"{settled_before} / "
        f"{settled_after}",
        **queries,
        "pushed commit -> in query history": f"p50 {np.percentile(latencies, 50):.2f} s, "
        f"p99 {np.percentile(latencies, 99):.2f} s ({len(latencies)} pushes)",
        "/v1/history of a file": f"p50 {np.percentile(reads, 50):.0f} ms, "
        f"p99 {np.percentile(reads, 99):.0f} ms ({len(reads)} files)",
    }


def query_latencies(
    supervisor: Supervisor, client: httpx.Client, requests: int
) -> tuple[dict[str, str], str]:
    """Search and context 8k with issue text, ``requests`` each, once the search copy has
    loaded what the stack holds now (the history's message rows too, after its ingest) and
    the vector tier has settled (as ``query.py`` measures): Milvus Lite compacts for minutes
    after 30,000 message rows, and requests timed meanwhile measured that, not the search.
    With how long the settling took."""
    wait_for_search_copy(client)
    settled = settle(supervisor, limit_s=900.0)
    issues = issue_queries()
    rng = random.Random(7)
    timings: dict[str, list[float]] = {"search (issue text)": [], "context 8k (issue text)": []}
    for _ in range(10):  # warm-up
        client.post("/v1/search", json={"query": rng.choice(issues)}).raise_for_status()
    for _ in range(requests):
        issue = rng.choice(issues)
        timings["search (issue text)"].append(
            timed(client.post, "/v1/search", json={"query": issue})
        )
        timings["context 8k (issue text)"].append(
            timed(client.post, "/v1/context", json={"query": issue, "budget_tokens": 8000})
        )
    return {
        name: "/".join(f"{percentile(values, q):.0f}" for q in (50, 95, 99))
        for name, values in timings.items()
    }, settled


if __name__ == "__main__":
    main()
