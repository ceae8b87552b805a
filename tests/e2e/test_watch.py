"""``patchstream watch`` against a real stack: an editor's writes reach search, its deletes
leave it, and what must stay on the machine does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from patchstream.embedded.supervisor import Supervisor
from tests.e2e.conftest import make_repo, wait_for


def _found(stack: Supervisor, text: str) -> set[str]:
    """Paths of the watched repository whose rows search returns for ``text``."""
    hits = httpx.post(f"{stack.settings.query.url}/v1/search",
                      json={"query": text, "repo": "watched", "limit": 20},
                      headers={"Authorization": "Bearer key-acme"}, timeout=60)  # fmt: skip
    if hits.status_code == 404:  # the repository is not indexed yet
        return set()
    hits.raise_for_status()
    return {hit["path"] for hit in hits.json()["hits"] if text in hit["text"]}


def test_an_editors_writes_and_deletes_are_published_and_secrets_stay(
    stack: Supervisor, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "watched", {"pkg/base.py": "def base():\n    return 0\n"})
    gateway = f"http://127.0.0.1:{stack.settings.gateway.port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env["PATCHSTREAM_GATEWAY"] = json.dumps({"url": gateway, "api_key": "key-acme"})
    watch = subprocess.Popen(
        [sys.executable, "-m", "patchstream.cli.main", "watch", str(repo), "--repo", "watched",
         "--debounce-ms", "100"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert watch.stdout is not None
        first, second = watch.stdout.readline(), watch.stdout.readline()
        assert first.startswith(f"watching {repo.resolve()} -> watched@main"), first
        assert "not indexed from here yet: `patchstream index" in second, second
        # An editor's save: the file written in place, then again (the watch may start
        # watching a moment after it printed its line).
        edited = repo / "pkg" / "edited.py"

        def written() -> bool:
            edited.write_text("def zebra_watch_canary():\n    return 7\n")
            (repo / ".env").write_text("TOKEN=zebra_watch_secret\n")
            return "pkg/edited.py" in _found(stack, "zebra_watch_canary")

        wait_for(written, timeout=120, what="the edited file in search")
        edited.unlink()
        wait_for(lambda: not _found(stack, "zebra_watch_canary"), timeout=120,
                 what="the deleted file gone from search")  # fmt: skip
        assert _found(stack, "zebra_watch_secret") == set()  # .env never left the machine
    finally:
        watch.send_signal(signal.SIGINT)  # Ctrl-C
        out, _ = watch.communicate(timeout=60)
    assert watch.returncode == 0, out
    assert "skipped .env: matches the deny-list" in out, out
    assert "stopped: " in out and "-pkg/edited.py" in out, out
