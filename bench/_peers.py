"""Peers measured in the same run as patchstream, each in its own virtualenv under
``bench/.peers`` (their dependencies never enter the project's environment)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PEERS = Path(__file__).resolve().parent / ".peers"
AIDER = "aider-chat==0.86.2"


def aider_python() -> Path:
    """The peer virtualenv's interpreter, made (once) with ``aider-chat`` from PyPI."""
    venv = PEERS / "aider"
    python = venv / "bin" / "python"
    stamp = venv / f".installed-{AIDER}"
    if not stamp.exists():
        print(f"installing {AIDER} into {venv} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", AIDER], check=True)
        stamp.touch()
    return python


def aider_repo_map(corpus: Path) -> dict[str, float]:
    """Aider's repo map (tags + ranking) over ``corpus``, cold: files, tags, seconds."""
    script = Path(__file__).resolve().parent / "peer_aider.py"
    done = subprocess.run([str(aider_python()), str(script), str(corpus)], check=True,
                          capture_output=True, text=True, timeout=3600)  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
