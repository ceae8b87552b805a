"""Pipeline bench: cold index of a real corpus through the whole embedded stack (seconds
until each tier has every file), re-index of the unchanged tree, steady-state latency from one
agent patch event to applied per tier, and the peak memory of every process.

Peers: Aider's repo map (aider-chat 0.86.2, tags + PageRank ranking, cold) over the same copy
of the corpus after the stack has stopped, in its own virtualenv; the ratio of the graph
tier's files/s to Aider's is the figure that counts (``--no-peer`` skips it). ``--cgc`` adds
CodeGraphContext 0.5.1 (``cgc index`` into KuzuDB: a peer that stores a code graph too),
minutes for a hundred files, so for the small corpus.

Corpus: a named corpus (``small``/``medium``/``large``: source trees of packages installed
from PyPI; ``npm``: a TypeScript tree from npm), copied to a temporary directory. The stack
(Tansu, FalkorDB, Milvus Lite, one parse worker, both sinks, query service, gateway) runs on
free ports with default settings.

    python bench/pipeline.py [--corpus small] [--edits 40] [--embedder hashing]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    StackMemory,
    build_corpus,
    corpus_label,
    corpus_size,
    cpu_seconds,
    format_memory,
    machine,
    peak_rss_mib,
    print_rows,
    stack_settings,
    update_results_row,
)
from _peers import aider_repo_map, codegraphcontext_index
from patchstream.config.settings import EmbeddingSettings, Settings
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from patchstream.schemas.events import PatchEvent
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.streams.producer import EventPublisher


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


async def measure_edits(
    settings: Settings, root: Path, repo: str, count: int, pause_s: float = 0.0
) -> dict[str, list[float]]:
    """edit->applied seconds per tier for ``count`` edits of different files, each after
    ``pause_s`` of quiet (the idle bench's first edit after a pause)."""
    graph = open_graph_store(settings)
    vectors = open_vector_store(settings)
    # Typical agent edits: source files of 2-40 kB, spread over the tree.
    candidates = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".ts")
                        and 2_000 < p.stat().st_size < 40_000)  # fmt: skip
    files = candidates[:: max(1, len(candidates) // count)][:count]
    latencies: dict[str, list[float]] = {"graph": [], "vector": []}
    async with EventPublisher(settings.kafka) as publisher:
        for file in files:
            await asyncio.sleep(pause_s)
            rel = file.relative_to(root).as_posix()
            text = file.read_text(errors="replace")
            middle = text.find("\n", len(text) // 2) + 1
            edited = text[:middle] + "_bench_marker = 1;\n" + text[middle:]
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
    parser.add_argument("--corpus", default="small",
                        choices=["small", "medium", "large", "npm", "c", "cpp",
                                 "csharp", "kotlin", "scala", "php", "ruby",
                                 "swift"])  # fmt: skip
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "minilm"])
    parser.add_argument("--update-results", action="store_true")
    parser.add_argument("--no-peer", action="store_true", help="skip Aider's repo map")
    parser.add_argument(
        "--cgc", action="store_true", help="also CodeGraphContext's index (minutes a hundred files)"
    )
    args = parser.parse_args()
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(args.corpus, Path(tmp) / "corpus")
        files, lines, size = corpus_size(corpus)
        label = corpus_label(args.corpus)
        print(f"corpus {label}: {files} source files, {lines} lines, {size / 1e6:.1f} MB; "
              f"embedder {args.embedder}; machine {machine()}", flush=True)  # fmt: skip
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
            memory = StackMemory(stack).start()
            before = cpu_seconds(stack)
            cold = asyncio.run(index_directory(settings, corpus, repo="corpus", tenant="bench",
                                               progress=False))  # fmt: skip
            after = cpu_seconds(stack)
            if not cold.complete:
                raise SystemExit(f"cold index did not complete: {cold.as_dict()}")
            rows["corpus"] = f"{label}, {cold.files_scanned} files, {lines} lines"
            rows["cold index s: graph tier / vector tier"] = (
                f"{cold.graph_seconds:.1f} / {cold.vector_seconds:.1f}"
            )
            rows["cold index files/s"] = f"{cold.files_scanned / cold.seconds:.1f}"
            rows["lines/s"] = f"{lines / cold.seconds:.0f}"
            rows["symbols/s"] = f"{cold.symbols / cold.seconds:.0f}"
            rows["chunks embedded"] = str(cold.chunks_embedded)
            rows["chunks/s through the pipeline"] = f"{cold.chunks_embedded / cold.seconds:.1f}"
            rows["CPU s during the cold index (both tiers)"] = ", ".join(
                f"{name} {after[name] - before.get(name, 0.0):.1f}" for name in after
            )
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
            at_once = memory.stop()
            peaks = {name: max(mib, memory.by_process.get(name, 0.0))
                     for name, mib in peak_rss_mib(stack).items()}  # fmt: skip
            rows["peak RSS MiB"] = format_memory(peaks)
            stack_peaks = sum(v for k, v in peaks.items() if not k.startswith("bench driver"))
            rows["peak RSS MiB, the stack (goal <= 2048): at one time / sum of each's peak"] = (
                f"{at_once:.0f} / {stack_peaks:.0f}"
            )
        finally:
            stack.stop()
        if not args.no_peer:  # with the stack stopped: the peer gets the same machine
            peer = aider_repo_map(corpus)
            graph_rate = cold.files_scanned / cold.graph_seconds
            peer_rate = peer["files"] / peer["seconds"]
            rows["graph tier files/s"] = f"{graph_rate:.1f}"
            rows["aider repo map files/s (same run)"] = (
                f"{peer_rate:.1f} ({int(peer['files'])} files, {peer['seconds']:.1f} s)"
            )
            rows["graph tier / aider"] = f"{graph_rate / peer_rate:.2f}x"
        if args.cgc:
            cgc = codegraphcontext_index(corpus)
            rows["codegraphcontext 0.5.1 (KuzuDB) index s, peak RSS MiB, files held"] = (
                f"{cgc['seconds']:.1f}, {cgc['peak_rss_mib']:.0f}, {cgc['files']:.0f} "
                f"(exit code {cgc['exit_code']:.0f})"
            )
            rows["graph tier / codegraphcontext"] = f"{cgc['seconds'] / cold.graph_seconds:.1f}x"
        if args.embedder != "hashing":  # with the stack stopped: the embedder has the cores
            own = embedder_throughput(args.embedder, corpus_texts(corpus))
            through = float(rows["chunks/s through the pipeline"])
            rows[f"{args.embedder} alone chunks/s (same run)"] = f"{own:.1f}"
            rows["pipeline / embedder throughput"] = f"{through / own:.2f}"
    print_rows(rows)
    if args.update_results:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        command = f"python bench/pipeline.py --corpus {args.corpus} --embedder {args.embedder}"
        command += " --cgc" if args.cgc else ""
        update_results_row(f"pipeline {args.corpus} ({args.embedder})", command, figures)


def corpus_texts(root: Path, limit: int = 256) -> list[str]:
    """Chunk texts of the corpus, as the pipeline would embed them."""
    from patchstream.parsing.filestate import FileRef, FileStateBuilder

    texts: list[str] = []
    builder = FileStateBuilder()
    for file in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".ts")):
        rel = file.relative_to(root).as_posix()
        state = builder.build(FileRef("b", "b", "main", rel, 1), file.read_bytes())
        texts.extend(chunk.text for chunk in state.chunks)
        if len(texts) >= limit:
            break
    return texts[:limit]


def embedder_throughput(kind: str, texts: list[str]) -> float:
    """The embedder's own chunks/s in this process, batch size as the sink uses it."""
    from patchstream.embedders.factory import create_embedder

    embedder = create_embedder(EmbeddingSettings(kind=kind))  # type: ignore[arg-type]
    embedder.embed(texts[:8])  # load the model
    batch = EmbeddingSettings().batch_size
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed(texts[start : start + batch])
    return len(texts) / (time.perf_counter() - started)


if __name__ == "__main__":
    main()
