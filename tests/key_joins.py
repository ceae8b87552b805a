"""Callers as the graph joins them, without a graph: each reference's candidate keys
(``keys.reference_keys``) against each symbol's key, plus the RETURNS join that a call on
what a field or function gives (``<its key>().m``) takes."""

from __future__ import annotations

from collections import defaultdict

from patchstream.parsing.delta import diff_states
from patchstream.schemas.graph import EdgeType
from patchstream.schemas.state import FileState
from patchstream.stores.graph.keys import reference_keys, symbol_key
from patchstream.stores.graph.planner import module_of

SCOPE = "t|r|main"


def joined_callers(
    states: dict[str, FileState], language: str, marker: str = ""
) -> set[tuple[str, str]]:
    """(caller, callee) by qualified name (``marker``: unused, the keys say it)."""
    by_key: dict[str, list[str]] = defaultdict(list)
    key_of: dict[str, str] = {}
    names = {}
    for state in states.values():
        module = module_of(diff_states(None, state), None)
        for symbol in state.symbols:
            names[symbol.id] = symbol.qualified_name
            key = symbol_key(SCOPE, module, symbol)
            if key is not None:
                by_key[key].append(symbol.id)
                key_of[symbol.id] = key

    def targets(dst: str, ref: object) -> list[str]:
        if ref is None:
            return [dst]
        return [t for k in reference_keys(SCOPE, ref, language) for t in by_key.get(k, ())]  # type: ignore[arg-type]

    # The RETURNS join (a field's declared type, a function's return): ``<key>().m`` -> ``T.m``.
    for state in states.values():
        for edge in state.edges:
            if edge.type is not EdgeType.RETURNS:
                continue
            giver = key_of.get(edge.src)
            if giver is None:
                continue
            for target in targets(edge.dst, edge.ref):
                owner = names[target]
                for ids in list(by_key.values()):
                    for sid in ids:
                        if names[sid].startswith(f"{owner}."):
                            method = names[sid].rsplit(".", 1)[1]
                            by_key[f"{giver}().{method}"].append(sid)
    found = set()
    for state in states.values():
        for edge in state.edges:
            if edge.type in (EdgeType.CALLS, EdgeType.INSTANTIATES):
                found |= {(names[edge.src], names[t]) for t in targets(edge.dst, edge.ref)
                          if t in names}  # fmt: skip
    return found
