"""Go callers against a hand-checked reference: a small module of three packages
(``tests/fixtures/go_kv``: an interface, two implementations, a cache holding the interface in
a struct field, a ``main`` calling through constructors of other packages), indexed into
FalkorDB in two arrival orders. Every caller edge of the reference was read off the code by
hand; a call through the interface counts as a call of each implementation (what Go's
dynamic dispatch can reach). No Go toolchain is installed here, so there is no gopls
reference; this is the issue's "hand-checked fixtures" floor."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstream.schemas.graph import CallResolution, SymbolKind
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import upsert

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "go_kv"
FILES = sorted(p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*.go"))

S, D, C, M = "store/store.go", "store/disk.go", "cache/cache.go", "cmd/kv/main.go"
# (caller, callee, how a precise tool would know): exact = declared or written there,
# dispatch = through the interface ``store.Store`` to an implementation.
REFERENCE = {
    (f"{D}::NewDisk", f"{S}::NewMemory", "exact"),
    (f"{D}::Disk.Get", f"{S}::Memory.Get", "exact"),  # d.index is *Memory
    (f"{D}::Disk.Get", f"{D}::Disk.path", "exact"),
    (f"{D}::Disk.Put", f"{S}::Memory.Put", "exact"),
    (f"{D}::Disk.Put", f"{D}::Disk.path", "exact"),
    (f"{C}::Cache.Lookup", f"{S}::Store.Get", "exact"),  # c.backing is store.Store
    (f"{C}::Cache.Lookup", f"{S}::Memory.Get", "dispatch"),
    (f"{C}::Cache.Lookup", f"{D}::Disk.Get", "dispatch"),
    (f"{C}::Cache.Lookup", f"{C}::Cache.count", "exact"),
    (f"{C}::Cache.Save", f"{S}::Store.Put", "exact"),
    (f"{C}::Cache.Save", f"{S}::Memory.Put", "dispatch"),
    (f"{C}::Cache.Save", f"{D}::Disk.Put", "dispatch"),
    (f"{M}::main", f"{C}::New", "exact"),
    (f"{M}::main", f"{D}::NewDisk", "exact"),
    (f"{M}::main", f"{C}::Cache.Save", "exact"),  # c := cache.New(...) returns *Cache
    (f"{M}::main", f"{C}::Cache.Lookup", "exact"),
    (f"{M}::main", f"{S}::NewMemory", "exact"),
    (f"{M}::main", f"{S}::Memory.Put", "exact"),  # mem := store.NewMemory() returns *Memory
}


def _callers(graph: CypherGraphStore, tenant: str, weakest: CallResolution) -> set[tuple[str, ...]]:
    """Every (caller, callee, resolution) the graph answers, over every function."""
    found = set()
    for path in FILES:
        for symbol in upsert(tenant, path, (FIXTURE / path).read_text(), 1).symbols:
            if symbol.kind is not SymbolKind.FUNCTION:
                continue
            for neighbor in graph.callers(tenant, symbol.id, 1, "main", weakest):
                caller = neighbor.symbol.id.split("::", 1)[1]
                found.add((caller, symbol.id.split("::", 1)[1], str(neighbor.resolution)))
    return found


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_go_callers_match_the_hand_checked_reference(
    graph: CypherGraphStore, tenant: str, order: str
) -> None:
    scoped = f"{tenant}-{order}"
    for path in FILES if order == "forward" else reversed(FILES):
        graph.apply(upsert(scoped, path, (FIXTURE / path).read_text(), 1))
    reference = {(src, dst) for src, dst, _ in REFERENCE}
    answered = _callers(graph, scoped, CallResolution.INFERRED)
    ours = {(src, dst) for src, dst, _ in answered}
    recall = len(ours & reference) / len(reference)
    precision = len(ours & reference) / len(ours)
    assert (recall, precision) == (1.0, 1.0), (sorted(reference - ours), sorted(ours - reference))
    # Dispatch through the interface is inferred; what the code declares is exact.
    by_edge = {(src, dst): res for src, dst, res in answered}
    for src, dst, how in REFERENCE:
        assert by_edge[(src, dst)] == ("inferred" if how == "dispatch" else "exact"), (src, dst)
    exact = {(src, dst) for src, dst, _ in _callers(graph, scoped, CallResolution.EXACT)}
    assert exact == {(src, dst) for src, dst, how in REFERENCE if how == "exact"}
