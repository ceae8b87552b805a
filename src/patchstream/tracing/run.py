"""``patchstream trace``: run a command under the tracer and turn what it called into trace
events (the I/O around the pure mapping)."""

from __future__ import annotations

import shlex
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.state import FileState
from patchstream.schemas.traces import TraceEvent
from patchstream.tracing.launch import run_traced
from patchstream.tracing.mapping import trace_events
from patchstream.tracing.reader import RawTrace, read_trace_dir

MAX_SOURCE_BYTES = 2 << 20  # the parser's own per-file limit


@dataclass
class TraceResult:
    returncode: int
    seconds: float
    processes: int
    pairs: int  # distinct pairs under the root, as traced
    edges: int  # distinct caller -> callee symbol pairs
    events: list[TraceEvent]
    refused: Counter[str] = field(default_factory=Counter)
    left_out: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        return {
            "returncode": self.returncode, "seconds": round(self.seconds, 3),
            "processes": self.processes, "pairs": self.pairs, "edges": self.edges,
            "events": len(self.events), "refused": dict(self.refused),
            "left_out": dict(self.left_out),
        }  # fmt: skip


def trace_command(
    command: list[str], root: Path, *, tenant: str, repo: str, ref: str
) -> TraceResult:
    root = root.resolve()
    with tempfile.TemporaryDirectory(prefix="patchstream-trace-") as work:
        traced = run_traced(command, root, Path(work))
        raw = read_trace_dir(traced.out_dir, root)
    states = _states(raw, root, tenant=tenant, repo=repo, ref=ref)
    mapped = trace_events(raw.counts, states, tenant=tenant, repo=repo, ref=ref,
                          command=shlex.join(command)[:2000])  # fmt: skip
    refused = Counter(raw.refused)
    if raw.dropped_at_source:
        refused["calls past a process's distinct-pair cap"] += raw.dropped_at_source
    return TraceResult(
        returncode=traced.returncode, seconds=traced.seconds, processes=raw.processes,
        pairs=len(raw.counts), edges=mapped.edges, events=mapped.events,
        refused=refused, left_out=mapped.left_out,
    )  # fmt: skip


def _states(raw: RawTrace, root: Path, *, tenant: str, repo: str, ref: str) -> dict[str, FileState]:
    """Each traced file's state as it is now; a file written after the command started is
    left out (what ran may not be what is on disk)."""
    paths = {p for caller, _, callee, _ in raw.counts for p in (caller, callee)}
    builder = FileStateBuilder()
    states: dict[str, FileState] = {}
    for path in sorted(paths):
        file = root / path
        try:
            if raw.earliest_start is not None and file.stat().st_mtime > raw.earliest_start:
                continue
            if file.stat().st_size > MAX_SOURCE_BYTES:
                continue
            data = file.read_bytes()
        except OSError:
            continue
        target = FileRef(tenant=tenant, repo=repo, ref=ref, path=path, version=0)
        states[path] = builder.build(target, data)
    return states
