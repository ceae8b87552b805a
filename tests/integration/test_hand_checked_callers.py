"""Callers against hand-checked references in C, C++, Go, Java and Rust: in each language a small
program of several files (an interface with two implementations, a cache holding the
interface in a field, a ``main`` calling through constructors and factories of other files),
indexed into FalkorDB in two arrival orders. Every caller edge of a reference was read off
the code by hand; a call through the interface counts as a call of each implementation (what
dynamic dispatch can reach). The C, Java and Rust programs compile (``gcc``, ``javac``, ``cargo
build``); no Go toolchain is installed here. C has no interfaces: its program has a header
joined to its definitions, two static functions of one name, a macro, a function pointer
parameter and two ``#if`` branches of one function instead. The C++ program (``g++``
compiles it) has namespaces, methods defined out of their class's file and a field of a
class another file declares. Constructors are reached by
INSTANTIATES edges to their class, not by CALLS, and are left out of the references."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from patchstream.schemas.graph import CallResolution, SymbolKind
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import upsert

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@dataclass(frozen=True)
class Program:
    root: Path
    suffix: str
    # (caller, callee, how a precise tool would know): exact = declared or written there,
    # dispatch = through the interface to an implementation.
    reference: frozenset[tuple[str, str, str]]

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob(self.suffix))


S, D, C, M = "store/store.go", "store/disk.go", "cache/cache.go", "cmd/kv/main.go"
GO = Program(FIXTURES / "go_kv", "*.go", frozenset({
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
}))  # fmt: skip

P = "com/shop"
JS, JM, JD = f"{P}/store/Store.java", f"{P}/store/Memory.java", f"{P}/store/Disk.java"
JC, JA = f"{P}/cache/Cache.java", f"{P}/app/Main.java"
JAVA = Program(FIXTURES / "java_shop", "*.java", frozenset({
    (f"{JD}::Disk.Disk", f"{JM}::Memory.create", "exact"),  # a static factory
    (f"{JD}::Disk.get", f"{JM}::Memory.get", "exact"),  # index is a Memory field, no this.
    (f"{JD}::Disk.get", f"{JD}::Disk.path", "exact"),
    (f"{JD}::Disk.put", f"{JM}::Memory.put", "exact"),  # this.index
    (f"{JD}::Disk.put", f"{JD}::Disk.path", "exact"),
    (f"{JC}::Cache.lookup", f"{JC}::Cache.count", "exact"),
    (f"{JC}::Cache.lookup", f"{JS}::Store.get", "exact"),  # backing is a Store
    (f"{JC}::Cache.lookup", f"{JM}::Memory.get", "dispatch"),
    (f"{JC}::Cache.lookup", f"{JD}::Disk.get", "dispatch"),
    (f"{JC}::Cache.save", f"{JS}::Store.put", "exact"),
    (f"{JC}::Cache.save", f"{JM}::Memory.put", "dispatch"),
    (f"{JC}::Cache.save", f"{JD}::Disk.put", "dispatch"),
    (f"{JA}::Main.main", f"{JC}::Cache.of", "exact"),
    (f"{JA}::Main.main", f"{JC}::Cache.save", "exact"),  # Cache cache = ...
    (f"{JA}::Main.main", f"{JM}::Memory.create", "exact"),
    (f"{JA}::Main.main", f"{JM}::Memory.put", "exact"),  # var memory = Memory.create()
    (f"{JA}::Main.main", f"{JC}::Cache.lookup", "exact"),  # new Cache(..).lookup, of(..).lookup
    (f"{JA}::Main.report", f"{JC}::Cache.backing#2", "exact"),  # the method, not the field
    (f"{JA}::Main.report", f"{JS}::Store.get", "exact"),  # through backing()'s return type
    (f"{JA}::Main.report", f"{JM}::Memory.get", "dispatch"),
    (f"{JA}::Main.report", f"{JD}::Disk.get", "dispatch"),
    (f"{JA}::Main.sized", f"{JC}::Cache.size", "exact"),  # SizedCache's field size hides nothing
    (f"{JA}::Main.peek", f"{JS}::Store.get", "exact"),  # through the field backing
    (f"{JA}::Main.peek", f"{JM}::Memory.get", "dispatch"),
    (f"{JA}::Main.peek", f"{JD}::Disk.get", "dispatch"),
}))  # fmt: skip

RS, RD, RC, RM = "src/store.rs", "src/disk.rs", "src/cache.rs", "src/main.rs"
RUST = Program(FIXTURES / "rust_shop", "*.rs", frozenset({
    (f"{RD}::Disk.open", f"{RS}::Memory.new", "exact"),
    (f"{RD}::Disk.get", f"{RD}::Disk.path", "exact"),
    (f"{RD}::Disk.get", f"{RS}::Memory.get", "exact"),  # index: Memory
    (f"{RD}::Disk.put", f"{RD}::Disk.path", "exact"),
    (f"{RD}::Disk.put", f"{RS}::Memory.put", "exact"),
    (f"{RC}::Cache.lookup", f"{RC}::Cache.count", "exact"),
    (f"{RC}::Cache.lookup", f"{RS}::Store.get", "exact"),  # backing: Box<dyn Store>
    (f"{RC}::Cache.lookup", f"{RS}::Memory.get", "dispatch"),
    (f"{RC}::Cache.lookup", f"{RD}::Disk.get", "dispatch"),
    (f"{RC}::Cache.save", f"{RS}::Store.put", "exact"),
    (f"{RC}::Cache.save", f"{RS}::Memory.put", "dispatch"),
    (f"{RC}::Cache.save", f"{RD}::Disk.put", "dispatch"),
    (f"{RM}::main", f"{RC}::Cache.new", "exact"),
    (f"{RM}::main", f"{RD}::Disk.open", "exact"),
    (f"{RM}::main", f"{RC}::Cache.save", "exact"),  # Cache::new() -> Self
    (f"{RM}::main", f"{RS}::Memory.new", "exact"),
    (f"{RM}::main", f"{RS}::Memory.put", "exact"),
    (f"{RM}::main", f"{RC}::Cache.lookup", "exact"),  # Cache::new(..).lookup(..)
    (f"{RM}::main", f"{RM}::report", "exact"),
    (f"{RM}::report", f"{RC}::Cache.backing", "exact"),
    (f"{RM}::report", f"{RS}::Store.get", "exact"),  # backing() -> &dyn Store
    (f"{RM}::report", f"{RS}::Memory.get", "dispatch"),
    (f"{RM}::report", f"{RD}::Disk.get", "dispatch"),
}))  # fmt: skip

CK, CC, CM, CH = "src/kv.c", "src/cache.c", "src/main.c", "include/kv.h"
C = Program(FIXTURES / "c_kv", "*.[ch]", frozenset({
    (f"{CK}::kv_open", f"{CK}::alloc_store", "exact"),  # declared static above, defined below
    (f"{CK}::kv_get", f"{CK}::hash", "exact"),  # this file's hash, not cache.c's
    (f"{CC}::cache_lookup", f"{CC}::hash", "exact"),
    (f"{CC}::cache_lookup", f"{CH}::KV_GET", "exact"),  # the macro; `fallback` is a parameter
    (f"{CH}::KV_GET", f"{CK}::kv_get", "exact"),  # what the macro expands to
    (f"{CM}::main", f"{CK}::kv_open", "exact"),  # through the header, to the definition
    (f"{CM}::main", f"{CC}::cache_lookup", "exact"),  # declared here, defined in cache.c
    (f"{CM}::main", f"{CM}::pick", "exact"),  # one #if branch's pick
    (f"{CM}::main", f"{CM}::pick#2", "exact"),  # and the other's: either may build
}))  # fmt: skip

PH, PS, PM = "store.h", "store.cc", "main.cc"
CPP = Program(FIXTURES / "cpp_kv", "*.*", frozenset({
    (f"{PS}::kv.Store.Put", f"{PS}::kv.Store.Valid", "exact"),  # bare: the class's member
    (f"{PS}::kv.Store.Put", f"{PS}::kv.Escape", "exact"),  # the namespace's (anonymous one)
    # log_-> : a field the header declares; Log::Append is defined out of its class's file.
    (f"{PS}::kv.Store.Put", f"{PS}::kv.Log.Append", "exact"),
    (f"{PS}::kv.Store.Get", f"{PS}::kv.Store.Valid", "exact"),  # this->
    (f"{PM}::main", f"{PS}::kv.Store.Put", "exact"),  # kv::Store* store
    (f"{PM}::main", f"{PS}::kv.Log.Append", "exact"),  # kv::Log log
    (f"{PM}::main", f"{PH}::kv.Log.size", "exact"),
}))  # fmt: skip

PROGRAMS = {"c": C, "cpp": CPP, "go": GO, "java": JAVA, "rust": RUST}


def _callers(
    graph: CypherGraphStore, tenant: str, program: Program, weakest: CallResolution
) -> set[tuple[str, ...]]:
    """Every (caller, callee, resolution) the graph answers, over every function."""
    found = set()
    for path in program.files():
        for symbol in upsert(tenant, path, (program.root / path).read_text(), 1).symbols:
            if symbol.kind is not SymbolKind.FUNCTION:
                continue
            for neighbor in graph.callers(tenant, symbol.id, 1, "main", weakest):
                caller = neighbor.symbol.id.split("::", 1)[1]
                found.add((caller, symbol.id.split("::", 1)[1], str(neighbor.resolution)))
    return found


@pytest.mark.parametrize("order", ["forward", "reverse"])
@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_callers_match_the_hand_checked_reference(
    graph: CypherGraphStore, tenant: str, language: str, order: str
) -> None:
    program = PROGRAMS[language]
    scoped = f"{tenant}-{language}-{order}"
    files = program.files()
    for path in files if order == "forward" else reversed(files):
        graph.apply(upsert(scoped, path, (program.root / path).read_text(), 1))
    reference = {(src, dst) for src, dst, _ in program.reference}
    answered = _callers(graph, scoped, program, CallResolution.INFERRED)
    ours = {(src, dst) for src, dst, _ in answered}
    recall = len(ours & reference) / len(reference)
    precision = len(ours & reference) / len(ours)
    missed, wrong = sorted(reference - ours), sorted(ours - reference)
    listed = "\n".join(map(str, ["missed:", *missed, "wrong:", *wrong]))
    assert (recall, precision) == (1.0, 1.0), listed
    # Dispatch through the interface is inferred; what the code declares is exact.
    by_edge = {(src, dst): res for src, dst, res in answered}
    for src, dst, how in program.reference:
        assert by_edge[(src, dst)] == ("inferred" if how == "dispatch" else "exact"), (src, dst)
    exact = {(src, dst) for src, dst, _ in _callers(graph, scoped, program, CallResolution.EXACT)}
    assert exact == {(src, dst) for src, dst, how in program.reference if how == "exact"}
