"""Sink bench: graph rows/s (nodes, edges) into FalkorDB, vector rows/s into Milvus Lite,
and embedder chunks/s for ``hashing`` and ``minilm``, on the source trees of installed packages.

Starts its own FalkorDB and Milvus Lite on free ports in a temporary directory.

    python bench/sinks.py [--packages click pydantic] [--minilm-chunks 128] [--update-results]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corpus_files, machine, package_tree, print_rows, update_results_row
from patchstream.embedded.services import free_port, start_falkordb, start_milvus_lite
from patchstream.embedders.hashing import HashingEmbedder
from patchstream.parsing.delta import diff_states
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.state import FileDelta
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.stores.vector.milvus import MilvusVectorStore


def build_deltas(packages: list[str]) -> list[FileDelta]:
    builder = FileStateBuilder()
    deltas = []
    for name in packages:
        root = package_tree(name)
        for file in corpus_files([root]):
            path = file.relative_to(root.parent).as_posix()
            state = builder.build(FileRef("bench", name, "main", path, 1), file.read_bytes())
            deltas.append(diff_states(None, state))
    return deltas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--packages", nargs="+", default=["click", "pydantic"])
    parser.add_argument("--minilm-chunks", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64, help="deltas per vector write")
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    deltas = build_deltas(args.packages)
    nodes = sum(len(d.symbols) for d in deltas)
    edges = sum(len(d.edges) for d in deltas)
    chunks = [c for d in deltas for c in d.chunks]
    print(
        f"corpus: {', '.join(args.packages)}: {len(deltas)} files, {nodes} nodes, "
        f"{edges} edges, {len(chunks)} chunks; machine: {machine()}"
    )
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        falkor = start_falkordb(Path(tmp) / "falkordb", free_port())
        milvus = start_milvus_lite(Path(tmp) / "milvus", free_port())
        try:
            graph = FalkorGraphStore(port=falkor.port)
            started = time.perf_counter()
            for delta in deltas:
                graph.apply(delta)
            graph_s = time.perf_counter() - started
            rows["graph files/s"] = f"{len(deltas) / graph_s:.0f}"
            rows["graph nodes/s"] = f"{nodes / graph_s:.0f}"
            rows["graph edges/s"] = f"{edges / graph_s:.0f}"
            graph.close()

            vectors = MilvusVectorStore(f"http://127.0.0.1:{milvus.port}", HashingEmbedder())
            vectors.ensure_schema()
            started = time.perf_counter()
            embed_s = 0.0
            for start in range(0, len(deltas), args.batch):
                stats = vectors.apply(deltas[start : start + args.batch])
                embed_s += stats.embed_seconds
            vector_s = time.perf_counter() - started
            rows["vector rows/s (hashing)"] = f"{len(chunks) / vector_s:.0f}"
            rows["vector store share of time"] = f"{1 - embed_s / vector_s:.0%}"
            vectors.close()
        finally:
            falkor.stop()
            milvus.stop()

    texts = [c.text for c in chunks]
    hashing = HashingEmbedder()
    started = time.perf_counter()
    hashing.embed(texts)
    rows["hashing embedder chunks/s"] = f"{len(texts) / (time.perf_counter() - started):.0f}"
    try:
        from patchstream.embedders.minilm import MiniLMEmbedder

        minilm = MiniLMEmbedder()
        sample = sorted(texts, key=len)[len(texts) // 2 :][: args.minilm_chunks]
        minilm.embed(sample[:4])  # warm-up
        started = time.perf_counter()
        minilm.embed(sample)
        rows["minilm embedder chunks/s"] = f"{len(sample) / (time.perf_counter() - started):.1f}"
    except Exception as exc:  # the [embed] extra is optional for this bench
        rows["minilm embedder chunks/s"] = f"n/a ({exc})"
    print_rows(rows)
    if args.update_results:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_results_row("sinks", "make bench-sinks", f"{len(deltas)} files: {figures}")


if __name__ == "__main__":
    main()
