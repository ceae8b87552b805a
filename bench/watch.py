"""Watch bench: a file saved in a watched checkout, to applied in each tier. A corpus is
indexed through the real pipeline, ``patchstream watch``'s watcher runs on it (through the
gateway, as the CLI does), and each edit is a write to disk; the same number of edits
published straight to the broker (what ``measure_edits`` times for the pipeline bench) is the
baseline of the same run. What the watch adds: its debounce, the gateway and its outbox.

    python bench/watch.py [--corpus small] [--edits 20] [--debounce-ms 100] [--update-results]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    build_corpus,
    corpus_label,
    index_corpus,
    machine,
    print_rows,
    stack_settings,
    update_results_row,
)
from patchstream.client import PatchClient
from patchstream.config.settings import GatewaySettings, Settings
from patchstream.embedded.services import free_port
from patchstream.embedded.supervisor import Supervisor
from patchstream.producers.watch import Watcher, WatchTarget
from patchstream.stores.factory import open_graph_store, open_vector_store
from pipeline import measure_edits, percentile

KEY = "bench-key"  # the gateway's key of tenant "bench", the corpus's


def edited_files(root: Path, count: int) -> list[Path]:
    """Source files of 2-40 kB spread over the tree, as ``measure_edits`` picks them."""
    candidates = sorted(p for p in root.rglob("*.py") if 2_000 < p.stat().st_size < 40_000)
    return candidates[:: max(1, len(candidates) // count)][:count]


def measure_saves(
    settings: Settings, root: Path, count: int, debounce_s: float
) -> dict[str, list[float]]:
    """save->applied seconds per tier for ``count`` saves of different files, one at a time,
    with the watcher running on ``root``."""
    gateway = f"http://127.0.0.1:{settings.gateway.port}"
    client = PatchClient(gateway, KEY)
    watcher = Watcher(WatchTarget(root.resolve(), "corpus"), client.write,
                      settings.parsing.max_file_bytes, debounce_s=debounce_s,
                      report=lambda _: None)  # fmt: skip
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    time.sleep(1.0)  # the observer's watches are in place
    graph, vectors = open_graph_store(settings), open_vector_store(settings)
    latencies: dict[str, list[float]] = {"graph": [], "vector": []}
    try:
        for file in edited_files(root, count):
            rel = file.relative_to(root).as_posix()
            vector_before = vectors.file_version("bench", "corpus", "main", rel) or 0
            before = {"graph": _graph_version(graph, rel), "vector": vector_before}
            text = file.read_text(errors="replace")
            middle = text.find("\n", len(text) // 2) + 1
            started = time.perf_counter()
            file.write_text(text[:middle] + "_saved_marker = 1\n" + text[middle:])
            pending = {"graph", "vector"}
            while pending and time.perf_counter() - started < 60:
                now = {"graph": _graph_version(graph, rel) if "graph" in pending else 0,
                       "vector": (vectors.file_version("bench", "corpus", "main", rel) or 0)
                       if "vector" in pending else 0}  # fmt: skip
                for tier in list(pending):
                    if now[tier] > before[tier]:
                        latencies[tier].append(time.perf_counter() - started)
                        pending.discard(tier)
                time.sleep(0.005)
    finally:
        stop.set()
        thread.join(timeout=30)
        client.close()
        graph.close()
        vectors.close()
    return latencies


def _graph_version(graph: Any, rel: str) -> int:
    fence = graph.file_version("bench", "corpus", "main", rel)
    return int(fence.version) if fence is not None else 0


def summary(latencies: dict[str, list[float]]) -> str:
    return ", ".join(
        f"{tier} {percentile(v, 50) * 1000:.0f}/{percentile(v, 95) * 1000:.0f}"
        for tier, v in latencies.items()
        if v
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="small", choices=["small", "medium", "npm"])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--debounce-ms", type=int, default=100)
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(args.corpus, Path(tmp) / "corpus")
        print(f"corpus {corpus_label(args.corpus)}; {args.edits} saves, debounce "
              f"{args.debounce_ms} ms; machine {machine()}", flush=True)  # fmt: skip
        settings = stack_settings(Path(tmp), "wbench.", gateway=GatewaySettings(
            port=free_port(), rate_per_key=0, api_keys={KEY: "bench"}))  # fmt: skip
        stack = Supervisor(settings)
        try:
            stack.start()
            indexed = index_corpus(stack, corpus)
            rows["corpus"] = f"{corpus_label(args.corpus)}, {indexed.files_scanned} files"
            saves = measure_saves(stack.settings, corpus, args.edits, args.debounce_ms / 1000)
            direct = asyncio.run(measure_edits(stack.settings, corpus, "corpus", args.edits))
        finally:
            stack.stop()
    rows[f"saved in a watched checkout -> applied, ms p50/p95 (n={args.edits})"] = summary(saves)
    rows["published straight to the broker (same run, same files), ms p50/p95"] = summary(direct)
    rows["the watch adds, p50 ms (its debounce is part of it)"] = ", ".join(
        f"{tier} {(percentile(saves[tier], 50) - percentile(direct[tier], 50)) * 1000:.0f}"
        for tier in ("graph", "vector")
        if saves[tier] and direct[tier]
    )
    print_rows(rows)
    if args.update_results:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_results_row(f"watch {args.corpus}", "python bench/watch.py", figures)


if __name__ == "__main__":
    main()
