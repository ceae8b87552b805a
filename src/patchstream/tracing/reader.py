"""Read what the traced processes wrote: untrusted input, checked row by row.

A traced command is the user's own code, so its trace files are written by code that could
write anything there. Each row must have the collector's shape; paths must lie under the root
once symlinks are resolved and be valid repository paths; counts must be plausible. What is
refused is counted by reason, never silently dropped.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from patchstream.errors import ContractError
from patchstream.schemas.paths import validate_repo_path
from patchstream.schemas.traces import MAX_COUNT

MAX_TRACE_FILE_BYTES = 256 << 20
MAX_TRACE_FILES = 10_000

# (caller path, caller qualname, callee path, callee qualname), paths relative to the root
Pair = tuple[str, str, str, str]


@dataclass
class RawTrace:
    """The pairs of every traced process, counts summed."""

    counts: Counter[Pair] = field(default_factory=Counter)
    processes: int = 0
    refused: Counter[str] = field(default_factory=Counter)  # reason -> rows
    dropped_at_source: int = 0  # calls past the collector's distinct-pair cap
    earliest_start: float | None = None


def read_trace_dir(out_dir: Path, root: Path) -> RawTrace:
    """Every trace file in ``out_dir``; paths made relative to ``root``."""
    trace = RawTrace()
    real_root = os.path.realpath(root) + os.sep
    relative: dict[str, str | None] = {}
    files = sorted(p for p in out_dir.glob("trace-*.json") if p.is_file())
    for path in files[:MAX_TRACE_FILES]:
        if path.stat().st_size > MAX_TRACE_FILE_BYTES:
            trace.refused["trace file over 256 MiB"] += 1
            continue
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            trace.refused["trace file is not JSON"] += 1
            continue
        if not isinstance(document, dict) or not isinstance(document.get("pairs"), list):
            trace.refused["trace file has no pairs"] += 1
            continue
        trace.processes += 1
        dropped, started = document.get("dropped"), document.get("started")
        if isinstance(dropped, int) and dropped > 0:
            trace.dropped_at_source += dropped
        if isinstance(started, (int, float)):
            trace.earliest_start = min(trace.earliest_start or started, float(started))
        for row in document["pairs"]:
            _take(trace, row, real_root, relative)
    if len(files) > MAX_TRACE_FILES:
        trace.refused["trace files past 10,000"] += len(files) - MAX_TRACE_FILES
    return trace


def _take(trace: RawTrace, row: object, real_root: str, relative: dict[str, str | None]) -> None:
    shape = (str, str, int, str, str, int, int)
    if (
        not isinstance(row, list)
        or len(row) != len(shape)
        or not all(
            isinstance(v, t) and not isinstance(v, bool) for v, t in zip(row, shape, strict=True)
        )
    ):
        trace.refused["malformed row"] += 1
        return
    caller_file, caller, caller_line, callee_file, callee, callee_line, count = row
    if not 1 <= count <= MAX_COUNT:
        trace.refused["implausible count"] += 1
        return
    paths = [_relative(f, real_root, relative) for f in (caller_file, callee_file)]
    if paths[0] is None or paths[1] is None:
        trace.refused["path outside the repository"] += 1
        return
    if len(caller) > 1000 or len(callee) > 1000:
        trace.refused["name over 1,000 characters"] += 1
        return
    caller, callee = _lambda_at(caller, caller_line), _lambda_at(callee, callee_line)
    trace.counts[(paths[0], caller, paths[1], callee)] += count


def _lambda_at(qualname: str, line: int) -> str:
    """A lambda's code is named by where it starts (``f.<locals>.<lambda>@12``): a lambda
    bound to a name is that name's symbol, found by its line."""
    return f"{qualname}@{line}" if qualname.endswith("<lambda>") else qualname


def _relative(path: str, real_root: str, seen: dict[str, str | None]) -> str | None:
    """The repository path of an absolute file name, or None when it is not one."""
    if path not in seen:
        found: str | None = None
        if Path(path).is_absolute():
            real = os.path.realpath(path)
            if real.startswith(real_root):
                try:
                    found = validate_repo_path(real[len(real_root) :].replace(os.sep, "/"))
                except ContractError:
                    found = None
        seen[path] = found
    return seen[path]
