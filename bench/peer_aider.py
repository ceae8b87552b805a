"""Aider's repo map over a directory: tags of every source file plus the PageRank ranking.

Runs inside the peer's own virtualenv (``bench/_peers.py`` makes it), never the project's:

    bench/.peers/aider/bin/python bench/peer_aider.py DIR

Prints one JSON line: files, tags, seconds. Cold: Aider keeps its tags cache in the root
(``.aider.tags.cache.v4``); it is removed before the run and after it.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    suffixes = {".py", ".ts", ".tsx", ".js", ".go", ".java", ".rs", ".c", ".h", ".cc", ".cpp",
                ".hpp", ".cs", ".kt", ".scala", ".php", ".rb", ".swift"}  # fmt: skip
    files = sorted(str(p) for p in root.rglob("*") if p.suffix in suffixes and p.is_file())
    from aider.io import InputOutput
    from aider.repomap import RepoMap

    cache = root / RepoMap.TAGS_CACHE_DIR
    shutil.rmtree(cache, ignore_errors=True)
    try:
        io = InputOutput(pretty=False, yes=True, fancy_input=False)
        started = time.perf_counter()
        repo_map = RepoMap(root=str(root), io=io, refresh="always")
        ranked = repo_map.get_ranked_tags([], files, set(), set())
        seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(json.dumps({"files": len(files), "tags": len(ranked), "seconds": seconds}))


if __name__ == "__main__":
    main()
