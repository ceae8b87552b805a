"""Callers as the graph joins them, without a graph: each reference's candidate keys
(``keys.reference_keys``) against each symbol's key, plus the RETURNS join that a call on
what a field or function gives (``<its key>().m``) takes, the CALLBACK_PARAM join of a
closure's parameter (``<callee's key>(*).m``), and a member a class inherits
(``<Sub's key>.m`` is the base's ``m`` when ``Sub`` defines none; the graph's
``CALLERS_THROUGH_SUBCLASSES``)."""

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

    # Inherited members, one level (what these tests need): ``<Sub key>.m`` -> ``Base.m``.
    members: dict[str, list[tuple[str, str]]] = defaultdict(list)  # owner -> (name, id)
    for sid, name in names.items():
        owner, _, member = name.rpartition(".")
        members[owner].append((member, sid))
    for state in states.values():
        for edge in state.edges:
            sub_key = key_of.get(edge.src)
            if edge.type is not EdgeType.INHERITS_FROM or sub_key is None:
                continue
            own = {member for member, _ in members[names[edge.src]]}
            for base in targets(edge.dst, edge.ref):
                for member, sid in members[names[base]]:
                    if member not in own and sid in key_of:
                        by_key[f"{sub_key}.{member}"].append(sid)
    # The RETURNS join (a field's declared type, a function's return): ``<key>().m`` -> ``T.m``;
    # the CALLBACK_PARAM join (a closure's parameter of the callee's type): ``<key>(*).m``.
    joins = {EdgeType.RETURNS: "()", EdgeType.CALLBACK_PARAM: "(*)"}
    for state in states.values():
        for edge in state.edges:
            if edge.type not in joins:
                continue
            giver = key_of.get(edge.src)
            if giver is None:
                continue
            found = {(names[sid].rsplit(".", 1)[1], sid)
                     for target in targets(edge.dst, edge.ref)
                     for ids in by_key.values() for sid in ids
                     if names[sid].startswith(f"{names[target]}.")}  # fmt: skip
            for method, sid in sorted(found):  # after the scan: no list grows while read
                by_key[f"{giver}{joins[edge.type]}.{method}"].append(sid)
    callers = set()
    for state in states.values():
        for edge in state.edges:
            if edge.type in (EdgeType.CALLS, EdgeType.INSTANTIATES):
                callers |= {(names[edge.src], names[t]) for t in targets(edge.dst, edge.ref)
                            if t in names}  # fmt: skip
    return callers
