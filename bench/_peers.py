"""Peers measured in the same run as patchstream, each in its own virtualenv under
``bench/.peers`` (their dependencies never enter the project's environment)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PEERS = Path(__file__).resolve().parent / ".peers"
AIDER = "aider-chat==0.86.2"
# The newest CodeGraphContext whose dependencies run offline: every later release needs
# tree-sitter-language-pack 1.x, which downloads its grammars at run time.
CGC = ("codegraphcontext==0.5.1", "tree-sitter-language-pack<1")


def peer_venv(name: str, requirements: tuple[str, ...]) -> Path:
    """A peer's virtualenv, made (once) with ``requirements`` from PyPI; its bin directory."""
    venv = PEERS / name
    stamp = venv / f".installed-{'+'.join(requirements)}"
    if not stamp.exists():
        print(f"installing {' '.join(requirements)} into {venv} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        *requirements], check=True)  # fmt: skip
        stamp.touch()
    return venv / "bin"


def aider_python() -> Path:
    """The Aider peer's interpreter (``aider-chat`` from PyPI)."""
    return peer_venv("aider", (AIDER,)) / "python"


def aider_repo_map(corpus: Path) -> dict[str, float]:
    """Aider's repo map (tags + ranking) over ``corpus``, cold: files, tags, seconds."""
    script = Path(__file__).resolve().parent / "peer_aider.py"
    done = subprocess.run([str(aider_python()), str(script), str(corpus)], check=True,
                          capture_output=True, text=True, timeout=3600)  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


_TIMED = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps([done.returncode, time.perf_counter() - started, peak]))
"""


def codegraphcontext_index(corpus: Path) -> dict[str, float]:
    """CodeGraphContext's ``cgc index`` of ``corpus`` into a fresh KuzuDB (its embedded
    store), cold, with its configuration in a throwaway home: seconds, the peak RSS of the
    indexer, the files its graph then holds, and its exit code (0.5.1 exits 1 with
    "'NoneType' object has no attribute 'split'" after it has written every file)."""
    cgc = peer_venv("codegraphcontext", CGC) / "cgc"
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home}
        db = ["--db", "kuzudb", "--path", str(Path(home) / "graph.kuzu")]
        # Timed from a fresh process whose only child is the indexer, so that its peak RSS
        # is the indexer's alone.
        done = subprocess.run([sys.executable, "-c", _TIMED, str(cgc), *db, "index",
                               str(corpus)], env=env, cwd=home, capture_output=True, text=True,
                              timeout=7200)  # fmt: skip
        exit_code, seconds, peak_mib = json.loads(done.stdout.strip().splitlines()[-1])
        stats = subprocess.run([str(cgc), *db, "stats"], env=env, cwd=home,
                               capture_output=True, text=True, timeout=600)  # fmt: skip
    held = re.search(r"Files\s*\S\s*(\d+)", stats.stdout)
    return {"seconds": seconds, "peak_rss_mib": peak_mib, "exit_code": exit_code,
            "files": float(held.group(1)) if held else 0.0}  # fmt: skip
