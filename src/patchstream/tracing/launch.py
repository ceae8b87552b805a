"""Run a command under the tracer: a ``sitecustomize`` on ``PYTHONPATH`` starts the collector
in every Python process the command starts, whatever interpreter it is."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from patchstream.tracing import collector

_COLLECTOR_MODULE = "_patchstream_trace_collector"

# Runs first in every traced interpreter; the environment's own sitecustomize still runs after.
_SITECUSTOMIZE = f"""\
import importlib, os, sys
import {_COLLECTOR_MODULE}
{_COLLECTOR_MODULE}.start_from_environment()
_here = os.path.dirname(os.path.abspath(__file__))
_ours = sys.modules.pop("sitecustomize", None)
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    importlib.import_module("sitecustomize")
except ImportError:
    sys.modules["sitecustomize"] = _ours
finally:
    sys.path[:] = _path
"""


@dataclass(frozen=True)
class TracedCommand:
    returncode: int
    seconds: float
    out_dir: Path  # one JSON file per traced process


def run_traced(command: list[str], root: Path, work_dir: Path) -> TracedCommand:
    """Run ``command`` (in ``root``) with every Python process in it traced; the trace files
    land in ``work_dir/out``. The command's own output goes to this terminal."""
    hook_dir, out_dir = work_dir / "hook", work_dir / "out"
    hook_dir.mkdir(parents=True)
    out_dir.mkdir()
    shutil.copyfile(collector.__file__, hook_dir / f"{_COLLECTOR_MODULE}.py")
    (hook_dir / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook_dir), env.get("PYTHONPATH", "")) if p)
    env[collector.ENV_DIR] = str(out_dir)
    env[collector.ENV_ROOT] = str(root)
    program = command[0]
    if "/" in program and not Path(program).is_absolute():  # relative to where it was typed
        command = [str(Path(program).resolve()), *command[1:]]
    elif shutil.which(program, path=env.get("PATH")) is None:
        raise FileNotFoundError(f"command not found: {program!r}")
    started = time.perf_counter()
    finished = subprocess.run(command, cwd=root, env=env, check=False)
    return TracedCommand(finished.returncode, time.perf_counter() - started, out_dir)
