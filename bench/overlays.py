"""Overlay bench: what an agent workspace and a branch overlay cost to create, and query
latency on an overlay against its base, on a real corpus indexed by the real pipeline.

- workspace: one file of the corpus rewritten in ``main~bench-ws`` (a function renamed):
  the rows the overlay stores, against the base's;
- branch: a copy of the corpus with 20 files edited and 2 deleted, indexed with
  ``--base main``: events published and rows stored, against the files scanned;
- latency: search, callers depth 2, impact depth 3 and context 8k through the HTTP API, the
  same requests on ``main`` and on the workspace, interleaved; the ratio of the percentiles.

    python bench/overlays.py [--corpus medium] [--requests 200] [--update-results]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    build_corpus,
    corpus_label,
    corpus_size,
    machine,
    print_rows,
    stack_settings,
    update_results_row,
)
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.read_tokens import make_read_token
from patchstream.stores.factory import open_graph_store
from patchstream.streams.producer import EventPublisher
from pipeline import percentile
from query import QUERIES, timed

WORKSPACE = "bench-ws"
VIEW = f"main~{WORKSPACE}"


def _rewrite(root: Path, rng: random.Random) -> tuple[str, str]:
    """A file with a top-level function, that function renamed: (path, new content)."""
    candidates = sorted(p for p in root.rglob("*.py") if p.stat().st_size > 4000)
    for path in rng.sample(candidates, len(candidates)):
        text = path.read_text(errors="replace")
        match = re.search(r"^def ([A-Za-z_]\w*)\(", text, re.M)
        if match:
            name = match.group(1)
            return str(path.relative_to(root)), re.sub(rf"\b{name}\b", f"{name}_v2", text)
    raise SystemExit("no file with a top-level function")


def _publish(settings: object, events: list[PatchEvent]) -> None:
    async def send() -> None:
        async with EventPublisher(settings.kafka) as publisher:  # type: ignore[attr-defined]
            await publisher.publish(events)

    asyncio.run(send())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="medium", choices=["small", "medium", "large"])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    rows: dict[str, str] = {}
    rng = random.Random(17)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(args.corpus, Path(tmp) / "corpus")
        files, lines, _size = corpus_size(corpus)
        print(f"corpus {corpus_label(args.corpus)}: {files} source files, {lines} lines; "
              f"requests {args.requests}; machine {machine()}", flush=True)  # fmt: skip
        stack = Supervisor(stack_settings(Path(tmp), "obench."))
        try:
            stack.start()
            summary = asyncio.run(
                index_directory(stack.settings, corpus, repo="corpus", tenant="bench",
                                progress=False, commits=0)
            )  # fmt: skip
            if not summary.complete:
                raise SystemExit(f"cold index did not complete: {summary.as_dict()}")
            rows["corpus"] = (f"{corpus_label(args.corpus)}, {summary.files_scanned} files, "
                              f"{summary.symbols} symbols")  # fmt: skip
            # -- a workspace: one file written ------------------------------------------
            path, content = _rewrite(corpus, rng)
            event = PatchEvent(tenant="bench", repo="corpus", workspace=WORKSPACE, path=path,
                               op="upsert", content=content, version=time.time_ns(),
                               source="agent")  # fmt: skip
            started = time.perf_counter()
            _publish(stack.settings, [event])
            client = httpx.Client(base_url=stack.settings.query.url, timeout=120,
                                  headers={"Authorization": "Bearer bench-key"})  # fmt: skip
            waited = client.get("/v1/wait", params={"read_token": make_read_token([event]),
                                                    "timeout": 120}).json()  # fmt: skip
            applied_ms = (time.perf_counter() - started) * 1000
            if not waited.get("applied"):
                raise SystemExit(f"the workspace write was not applied: {waited}")
            graph = open_graph_store(stack.settings)
            overlay = next(o for o in graph.overlays("bench", "corpus") if o.ref == VIEW)
            file_symbols = len(graph.file_symbols("bench", "corpus", "main", path))
            rows["workspace, 1 file written"] = (
                f"{overlay.files} file and {overlay.symbols} symbols stored (the file has "
                f"{file_symbols} on main; the base {summary.symbols}: "
                f"{overlay.symbols / max(1, summary.symbols):.4f} of a copy), "
                f"write to applied {applied_ms:.0f} ms"
            )
            # -- a branch: 20 files edited, 2 deleted, indexed over main -----------------
            branch = Path(tmp) / "branch"
            shutil.copytree(corpus, branch)
            sources = sorted(p for p in branch.rglob("*.py") if p.name != "__init__.py")
            for edited in rng.sample(sources, 22)[:20]:
                edited.write_text(edited.read_text(errors="replace") + "\n\ndef _bench_edit():\n"
                                  "    return 1\n")  # fmt: skip
            for gone in rng.sample(sources, 2):
                gone.unlink(missing_ok=True)
            done = asyncio.run(index_directory(stack.settings, branch, repo="corpus",
                                               tenant="bench", ref="feature", base="main",
                                               progress=False, commits=0))  # fmt: skip
            feature = next(o for o in graph.overlays("bench", "corpus") if o.ref == "feature")
            rows["branch over main (20 edited, 2 deleted)"] = (
                f"{done.published} events published of {done.files_scanned} files scanned, "
                f"{feature.files} files + {feature.deleted} deletions and {feature.symbols} "
                f"symbols stored, {done.seconds:.1f} s"
            )
            # -- latency: base vs workspace, interleaved --------------------------------
            ids = [s.id for q in ("run", "validate", "get", "solve", "check", "fit")
                   for s in graph.symbols_by_name("bench", q, "corpus", "main")]  # fmt: skip
            ids += [s.id for s in graph.file_symbols("bench", "corpus", VIEW, path)]
            graph.close()
            timings: dict[str, dict[str, list[float]]] = {"main": {}, "workspace": {}}
            for turn in range(-10, args.requests):  # ten untimed rounds warm both up
                if turn == 0:
                    timings = {"main": {}, "workspace": {}}
                query, symbol = rng.choice(QUERIES), quote(rng.choice(ids), safe="/:")
                pair = [("main", "main"), ("workspace", VIEW)]
                for label, ref in pair if turn % 2 else pair[::-1]:  # neither always first
                    into = timings[label]
                    body = {"query": query, "repo": "corpus", "ref": ref}
                    walk = {"depth": 2, "ref": ref}
                    into.setdefault("search", []).append(
                        timed(client.post, "/v1/search", json=body)
                    )
                    into.setdefault("callers d2", []).append(
                        timed(client.get, f"/v1/symbols/{symbol}/callers", params=walk)
                    )
                    into.setdefault("impact d3", []).append(
                        timed(client.get, f"/v1/symbols/{symbol}/impact",
                              params={**walk, "depth": 3})
                    )  # fmt: skip
                    into.setdefault("context 8k", []).append(
                        timed(client.post, "/v1/context", json={**body, "budget_tokens": 8000})
                    )
            client.close()
            for name in timings["main"]:
                base, over = timings["main"][name], timings["workspace"][name]
                p = {q: (percentile(base, q), percentile(over, q)) for q in (50, 99)}
                rows[f"{name} ms p50/p99 main -> workspace (ratio)"] = (
                    f"{p[50][0]:.1f}/{p[99][0]:.1f} -> {p[50][1]:.1f}/{p[99][1]:.1f} "
                    f"({p[50][1] / p[50][0]:.2f}x/{p[99][1] / p[99][0]:.2f}x)"
                )
        finally:
            stack.stop()
    print_rows(rows)
    if args.update_results:
        update_results_row(
            f"overlays {args.corpus}",
            f"python bench/overlays.py --corpus {args.corpus}",
            "; ".join(f"{k}: {v}" for k, v in rows.items()),
        )


if __name__ == "__main__":
    main()
