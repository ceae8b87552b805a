"""Remote index bench: ``patchstream index`` as a client of a server (no store access)
against the local index, on the same stack and corpus in the same run.

Measured: the cold index's files/s through the server (the client reads ``/v1/files`` and
uploads gzipped batches through the gateway) against the local index of the same files under
another repository name; and the bytes the client sends for a re-index of the unchanged
tree and after one edited file, against the corpus's bytes. Bytes are counted on the wire:
every request body and URL the client's HTTP connections send.

    python bench/remote_index.py [--corpus medium] [--update-results]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

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
from patchstream.config.settings import GatewaySettings, QuerySettings, Settings
from patchstream.embedded.services import free_port
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing import remote
from patchstream.indexing.run import IndexSummary, index_directory

SENT = {"bytes": 0}


class CountingClient(httpx.Client):
    """An httpx client that adds what each request puts on the wire to ``SENT``."""

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        SENT["bytes"] += len(request.content) + len(str(request.url)) + 200  # + headers
        return super().send(request, **kwargs)


def remote_index(settings: Settings, root: Path, repo: str) -> tuple[IndexSummary, int]:
    """One remote index; the bytes its client sent."""
    SENT["bytes"] = 0
    summary = remote.index_remote(settings, root, repo=repo, progress=False, commits=0)
    return summary, SENT["bytes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="medium")
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    httpx.Client = CountingClient  # type: ignore[misc]  # every client the index opens counts
    with tempfile.TemporaryDirectory(prefix="remote-bench-") as tmp:
        root = build_corpus(args.corpus, Path(tmp) / "corpus")
        files, lines, size = corpus_size(root)
        print(f"corpus {corpus_label(args.corpus)}: {files} files, {lines} lines, {size} bytes; "
              f"machine {machine()}", flush=True)  # fmt: skip
        keys = {"bench-key": "bench"}  # one tenant for both services
        supervisor = Supervisor(stack_settings(
            Path(tmp), f"remote{int(time.time())}.",
            query=QuerySettings(port=free_port(), api_keys=keys, rate_per_key=0),
            gateway=GatewaySettings(port=free_port(), api_keys=keys, rate_per_key=0)))  # fmt: skip
        supervisor.start()
        try:
            settings = supervisor.settings  # the embedded addresses resolved
            client = settings.model_copy(deep=True)
            client.query.api_key = client.gateway.api_key = SecretStr("bench-key")
            assert client.gateway.url, "the stack's gateway URL: what makes index a client"
            started = time.monotonic()
            local = asyncio.run(index_directory(settings, root, repo="local", tenant="bench",
                                                progress=False, commits=0))  # fmt: skip
            local_s = time.monotonic() - started
            started = time.monotonic()
            cold, cold_bytes = remote_index(client, root, "remote")
            remote_s = time.monotonic() - started
            again, again_bytes = remote_index(client, root, "remote")
            edited = next(p for p in sorted(root.rglob("*.py")) if p.stat().st_size > 2000)
            edited.write_text(edited.read_text() + "\n\ndef bench_edit():\n    return 1\n")
            one, one_bytes = remote_index(client, root, "remote")
        finally:
            supervisor.stop()
    assert local.complete and cold.complete and again.complete and one.complete
    rows = {
        "local cold index": f"{local.files_scanned / local_s:.1f} files/s ({local_s:.1f} s)",
        "remote cold index": f"{cold.files_scanned / remote_s:.1f} files/s ({remote_s:.1f} s), "
        f"{cold_bytes / size:.2f} of the corpus's bytes sent (gzip)",
        "remote / local": f"{local_s / remote_s:.2f}x the local files/s",
        "re-index, unchanged": f"{again.published} files, {again_bytes} bytes sent "
        f"({again_bytes / size:.4%} of the corpus)",
        "re-index, one file edited": f"{one.published} file, {one_bytes} bytes sent",
    }
    print_rows(rows)
    if args.update_results:
        update_results_row(
            f"remote index ({args.corpus})", f"python bench/remote_index.py --corpus {args.corpus}",
            f"{rows['remote / local']} (remote {rows['remote cold index']}); re-index of the "
            f"unchanged tree: {rows['re-index, unchanged']}",
        )  # fmt: skip


if __name__ == "__main__":
    main()
