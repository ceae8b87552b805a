"""Traced pairs -> trace events: Python's code names mapped to the graph's symbol ids. Pure.

Python names a code object ``outer.<locals>.inner``; the graph names that symbol
``outer.inner``. A lambda bound to a name (``key = lambda x: ...``) is that name's symbol,
found by the line it starts on (the reader names its code ``outer.<lambda>@12``). Code that
runs inside another lambda or a comprehension belongs, as a caller, to the function around
it (static extraction attributes it there too). As a callee, such a lambda, a comprehension,
a module body or a class body is no symbol of the graph: those pairs are counted by reason
and left out, never guessed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from patchstream.schemas.graph import SymbolKind
from patchstream.schemas.state import FileState
from patchstream.schemas.traces import MAX_CALLS_PER_EVENT, MAX_COUNT, TracedCall, TraceEvent
from patchstream.tracing.reader import Pair

_ANONYMOUS = ("<lambda>", "<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")
_MODULE = "<module>"


@dataclass
class Mapped:
    events: list[TraceEvent] = field(default_factory=list)
    edges: int = 0
    left_out: Counter[str] = field(default_factory=Counter)  # reason -> distinct pairs


def graph_name(qualname: str) -> str:
    """``outer.<locals>.inner`` -> ``outer.inner``."""
    return ".".join(part for part in qualname.split(".") if part != "<locals>")


def _anonymous(part: str) -> bool:
    return part.partition("@")[0] in _ANONYMOUS


def caller_name(qualname: str, named: Mapping[str, object] | None = None) -> str:
    """The symbol a caller's code belongs to: a named lambda its own (when ``named`` holds
    it), other anonymous code the function around it; nothing around it is the module."""
    parts = graph_name(qualname).split(".")
    while parts and _anonymous(parts[-1]):
        if named is not None and ".".join(parts) in named:
            return ".".join(parts)
        parts.pop()
    return ".".join(parts) if parts and parts != [_MODULE] else _MODULE


def trace_events(
    counts: Mapping[Pair, int],
    states: Mapping[str, FileState],
    *,
    tenant: str,
    repo: str,
    ref: str,
    command: str,
) -> Mapped:
    """One event per caller file (split past ``MAX_CALLS_PER_EVENT``). ``states`` holds each
    file's parsed state at the content traced; a file missing there was unreadable or changed
    during the run, and its pairs are left out."""
    mapped = Mapped()
    names = {path: _symbols(state) for path, state in states.items()}
    calls: dict[str, Counter[tuple[str, str, str]]] = defaultdict(Counter)
    for (caller_path, caller, callee_path, callee), count in counts.items():
        if caller_path not in names or callee_path not in names:
            mapped.left_out["file unreadable or changed during the run"] += 1
            continue
        callee_key = graph_name(callee)
        named_lambda = callee_key in names[callee_path]
        anonymous = any(_anonymous(p) for p in callee_key.split("."))
        if callee_key == _MODULE or (anonymous and not named_lambda):
            mapped.left_out["callee is a lambda, comprehension or module body"] += 1
            continue
        callee_symbol = names[callee_path].get(callee_key)
        caller_symbol = names[caller_path].get(caller_name(caller, names[caller_path]))
        if callee_symbol is None or caller_symbol is None:
            mapped.left_out["name not among the file's symbols"] += 1
            continue
        if callee_symbol[1] != SymbolKind.FUNCTION:
            mapped.left_out["callee is a class body"] += 1
            continue
        pair = (caller_symbol[0], callee_path, callee_symbol[0])
        calls[caller_path][pair] = min(MAX_COUNT, calls[caller_path][pair] + count)
    for caller_path, pairs in sorted(calls.items()):
        rows = [
            TracedCall(caller=caller, callee=callee, callee_path=callee_path,
                       callee_hash=_hash(states[callee_path]), count=count)
            for (caller, callee_path, callee), count in sorted(pairs.items())
        ]  # fmt: skip
        mapped.edges += len(rows)
        for start in range(0, len(rows), MAX_CALLS_PER_EVENT):
            mapped.events.append(TraceEvent(
                tenant=tenant, repo=repo, ref=ref, path=caller_path,
                content_hash=_hash(states[caller_path]), command=command,
                calls=rows[start : start + MAX_CALLS_PER_EVENT],
            ))  # fmt: skip
    return mapped


def _symbols(state: FileState) -> dict[str, tuple[str, SymbolKind]]:
    """qualified name -> (symbol id, kind); the module under ``<module>``, a lambda bound to
    a name also under the code's name (``outer.<lambda>@12``)."""
    found: dict[str, tuple[str, SymbolKind]] = {}
    for symbol in state.symbols:
        if symbol.kind == SymbolKind.MODULE:
            found[_MODULE] = (symbol.id, symbol.kind)
        elif symbol.kind in (SymbolKind.FUNCTION, SymbolKind.CLASS):
            found.setdefault(symbol.qualified_name, (symbol.id, symbol.kind))
            if (symbol.signature or "").startswith("lambda"):
                scope = symbol.qualified_name.rpartition(".")[0]
                code = ".".join(p for p in (scope, f"<lambda>@{symbol.start_line}") if p)
                found.setdefault(code, (symbol.id, symbol.kind))
    return found


def _hash(state: FileState) -> str:
    if state.content_hash is None:  # a parsed file always has one
        raise ValueError(f"{state.path} has no content hash")
    return state.content_hash
