"""Pipeline bench: cold index of a real corpus through the whole embedded stack, re-index of
the unchanged tree, and steady-state latency from one agent patch event to applied, per tier.

Corpus: the source trees of installed packages, copied to a temporary directory. The stack
(Tansu, FalkorDB, Milvus Lite, one parse worker, both sinks) runs on free ports.

    python bench/pipeline.py [--packages click pydantic] [--edits 40] [--embedder hashing]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import copy_corpus, machine, print_rows, stack_settings, update_readme_row
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from patchstream.schemas.events import PatchEvent
from patchstream.settings import EmbeddingSettings, Settings
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.streams.producer import EventPublisher


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


async def measure_edits(
    settings: Settings, root: Path, repo: str, count: int
) -> dict[str, list[float]]:
    graph = open_graph_store(settings)
    vectors = open_vector_store(settings)
    files = sorted(p for p in root.rglob("*.py") if 2_000 < p.stat().st_size < 40_000)[:count]
    latencies: dict[str, list[float]] = {"graph": [], "vector": []}
    async with EventPublisher(settings.kafka) as publisher:
        for file in files:
            rel = file.relative_to(root).as_posix()
            text = file.read_text(errors="replace")
            middle = text.find("\n", len(text) // 2) + 1
            edited = text[:middle] + "_bench_marker = 1\n" + text[middle:]
            version = time.time_ns()
            event = PatchEvent(tenant="bench", repo=repo, path=rel, op="upsert", content=edited,
                               version=version, source="agent")  # fmt: skip
            started = time.perf_counter()
            await publisher.publish([event])
            pending = {"graph", "vector"}
            while pending and time.perf_counter() - started < 60:
                if "graph" in pending:
                    fence = graph.file_version("bench", repo, "main", rel)
                    if fence is not None and fence.version >= version:
                        latencies["graph"].append(time.perf_counter() - started)
                        pending.discard("graph")
                if "vector" in pending:
                    applied = vectors.file_version("bench", repo, "main", rel)
                    if applied is not None and applied >= version:
                        latencies["vector"].append(time.perf_counter() - started)
                        pending.discard("vector")
                await asyncio.sleep(0.005)
    graph.close()
    vectors.close()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--packages", nargs="+", default=["click", "pydantic"])
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "minilm"])
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = copy_corpus(args.packages, Path(tmp) / "corpus")
        settings = stack_settings(
            Path(tmp), "bench.", embedding=EmbeddingSettings(kind=args.embedder)
        )
        stack = Supervisor(settings)
        try:
            stack.start()
            settings = stack.settings
            # Warm-up: the first event waits for the parse worker to join its group; that
            # start-up is not indexing time.
            warm = Path(tmp) / "warm"
            warm.mkdir()
            (warm / "warm.py").write_text("def warm():\n    return 1\n")
            asyncio.run(index_directory(settings, warm, repo="warm", tenant="bench",
                                        progress=False))  # fmt: skip
            cold = asyncio.run(index_directory(settings, corpus, repo="corpus", tenant="bench",
                                               progress=False))  # fmt: skip
            rows["cold index files"] = str(cold.files_scanned)
            rows["cold index seconds (both tiers)"] = f"{cold.seconds:.1f}"
            rows["cold index files/s"] = f"{cold.files_scanned / cold.seconds:.1f}"
            rows["cold index symbols/s"] = f"{cold.symbols / cold.seconds:.0f}"
            rows["chunks embedded"] = str(cold.chunks_embedded)
            again = asyncio.run(index_directory(settings, corpus, repo="corpus", tenant="bench",
                                                progress=False))  # fmt: skip
            rows["re-index unchanged: events published"] = str(again.published)
            rows["re-index unchanged: chunks embedded"] = str(again.chunks_embedded)
            rows["re-index unchanged: seconds"] = f"{again.seconds:.2f}"
            latencies = asyncio.run(measure_edits(settings, corpus, "corpus", args.edits))
            for tier, values in latencies.items():
                if values:
                    ms = [v * 1000 for v in values]
                    rows[f"edit->applied {tier} ms p50/p95/p99"] = (
                        f"{percentile(ms, 50):.0f}/{percentile(ms, 95):.0f}/"
                        f"{percentile(ms, 99):.0f} (n={len(ms)})"
                    )
        finally:
            stack.stop()
    print(f"corpus: {', '.join(args.packages)}; embedder: {args.embedder}; machine: {machine()}")
    print_rows(rows)
    if args.update_readme:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_readme_row(f"pipeline ({args.embedder})", "make bench-pipeline", figures)


if __name__ == "__main__":
    main()
