"""C++ (issue #56): namespaces and classes in qualified names, methods defined out of their
class, fields, calls looked up from the scope they are written in (class, then each
enclosing namespace, then the global one), declared receiver types and fields of another
file's class, headers told apart from C's, and broken code keeping its last good state."""

from __future__ import annotations

import time
from pathlib import Path

from patchstream.parsing.cpp_language import without_export_macros
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.languages import language_for
from patchstream.parsing.modules import C_GLOBAL
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.schemas.state import FileState
from patchstream.stores.graph.keys import symbol_key
from tests.conftest import build_state
from tests.key_joins import SCOPE, joined_callers

KV = Path(__file__).resolve().parents[1] / "fixtures" / "cpp_kv"


def _states(builder: FileStateBuilder) -> dict[str, FileState]:
    return {f"cpp_kv/{p.name}": build_state(builder, f"cpp_kv/{p.name}", p.read_bytes())
            for p in sorted(KV.iterdir())}  # fmt: skip


def _callers(states: dict[str, FileState]) -> set[tuple[str, str]]:
    return joined_callers(states, "cpp", C_GLOBAL)


def test_cpp_symbols_carry_namespaces_and_classes(builder: FileStateBuilder) -> None:
    states = _states(builder)
    header, source = states["cpp_kv/store.h"], states["cpp_kv/store.cc"]
    assert header.language == "cpp" and source.language == "cpp"  # a .h holding C++
    kinds = {s.qualified_name: s.kind for s in header.symbols if s.kind is not SymbolKind.FILE}
    assert kinds == {
        "cpp_kv/store": SymbolKind.MODULE, "kv.Log": SymbolKind.CLASS,
        "kv.Log.size": SymbolKind.FUNCTION, "kv.Log.count_": SymbolKind.VARIABLE,
        "kv.Store": SymbolKind.CLASS, "kv.Store.log_": SymbolKind.VARIABLE,
    }  # fmt: skip
    defined = {s.qualified_name for s in source.symbols if s.kind is SymbolKind.FUNCTION}
    # Out of their class (``Store::Put``), in their namespace; the anonymous namespace's
    # helper is its enclosing namespace's.
    assert defined == {"kv.Escape", "kv.Log.Append", "kv.Store.Store", "kv.Store.Put",
                       "kv.Store.Get", "kv.Store.Valid"}  # fmt: skip
    key = {s.qualified_name: symbol_key(SCOPE, "cpp_kv/store", s) for s in source.symbols}
    assert key["kv.Store.Put"] == f"{SCOPE}|{C_GLOBAL}|kv.Store.Put"


def test_cpp_calls_resolve_from_their_scope_outward(builder: FileStateBuilder) -> None:
    """Checked by hand against the source; g++ -fcallgraph-info lists the same calls for
    the two translation units (std:: calls left out; ``kv::Log log;`` runs an implicit
    constructor there, which it does not list)."""
    assert _callers(_states(builder)) == {
        ("kv.Store.Put", "kv.Store.Valid"),  # bare: the class's member
        ("kv.Store.Put", "kv.Escape"),  # bare: the enclosing namespace's
        ("kv.Store.Put", "kv.Log.Append"),  # log_->: a field another file declares
        ("kv.Store.Get", "kv.Store.Valid"),  # this->
        ("main", "kv.Store"),  # new kv::Store(...)
        ("main", "kv.Log"),  # kv::Log log; builds one
        ("main", "kv.Store.Put"),  # store-> declared kv::Store*
        ("main", "kv.Log.Append"),  # log. declared kv::Log
        ("main", "kv.Log.size"),
    }


def test_cpp_library_calls_and_elements_resolve_to_nothing(builder: FileStateBuilder) -> None:
    state = build_state(builder, "a.cc", b"namespace n {\nstruct A { void m(); };\n"
                        b"void A::m() { std::max(1, 2); items_[0].m(); }\n}\n")  # fmt: skip
    calls = [e for e in state.edges if e.type is EdgeType.CALLS]
    assert all(e.ref is not None and e.ref.module is None for e in calls), calls


def test_a_header_is_cpp_only_when_it_holds_cpp() -> None:
    assert language_for("a.h", b"namespace kv {\nint f();\n}\n") == "cpp"
    assert language_for("a.h", b"template <typename T> T f(T);\n") == "cpp"
    c_header = b'#ifdef __cplusplus\nextern "C" {\n#endif\nint f(void);\n'
    assert language_for("a.h", c_header) == "c"
    assert language_for("a.hpp", b"int f();\n") == "cpp"
    # Hostile: thousands of lines that almost look like C++ (each part is bounded by its line).
    assert language_for("a.h", b"class a\n" * 8000 + b"int f(void);\n") == "c"
    assert language_for("a.h", b"namespace " + b"x" * 60_000) == "c"


def test_export_macros_are_blanked_for_the_parser_only(builder: FileStateBuilder) -> None:
    source = b"namespace n {\nclass LEVELDB_EXPORT Status {\n public:\n  bool ok() const;\n};\n}\n"
    assert without_export_macros(source) == source.replace(b"LEVELDB_EXPORT", b" " * 14)
    state = build_state(builder, "status.h", source)
    [status] = [s for s in state.symbols if s.kind is SymbolKind.CLASS]
    assert (status.qualified_name, status.signature) == ("n.Status", "class LEVELDB_EXPORT Status")
    assert not state.flags.has_errors
    hostile = b"class " + b"A" * 5000 + b" " * 5000 + b"x" * 5000
    assert without_export_macros(hostile) == hostile


def test_thread_safety_annotations_keep_their_fields_and_methods(
    builder: FileStateBuilder,
) -> None:
    """``VersionSet* const versions_ GUARDED_BY(mutex_);`` read the macro as the declarator:
    the field's type (and a method with ``EXCLUSIVE_LOCKS_REQUIRED``) was lost."""
    header = (b"namespace n {\nclass VersionSet {\n public:\n  int NewFileNumber();\n};\n"
              b"class DB {\n public:\n  void Compact() EXCLUSIVE_LOCKS_REQUIRED(mutex_);\n"
              b" private:\n  Mutex mutex_;\n  VersionSet* const versions_ GUARDED_BY(mutex_);\n"
              b"  int pending_ GUARDED_BY(mutex_) = 0;\n};\n}\n")  # fmt: skip
    source = (
        b'#include "db.h"\nnamespace n {\nint VersionSet::NewFileNumber() { return 1; }\n'
        b"void DB::Compact() { versions_->NewFileNumber(); }\n}\n"
    )
    states = {"db.h": build_state(builder, "db.h", header),
              "db.cc": build_state(builder, "db.cc", source)}  # fmt: skip
    assert not states["db.h"].flags.has_errors
    names = {s.qualified_name for s in states["db.h"].symbols}
    assert {"n.DB.versions_", "n.DB.pending_"} <= names  # the fields the macros hid
    assert ("n.DB.Compact", "n.VersionSet.NewFileNumber") in joined_callers(states, "cpp")
    # An expression is never an annotation: ``return MAX_OF(a, b);`` stays, and a macro
    # defined on a preprocessor line too.
    kept = b"int f() { return MAX_OF(a, b); }\n#define G(x) H MAX_OF(x)\n"
    assert without_export_macros(kept) == kept
    # Hostile: 20,000 near-annotations, each bounded to its line.
    hostile = (b"int a" + b" " * 300 + b"A_B(c)") * 20_000
    started = time.perf_counter()
    without_export_macros(hostile)
    assert time.perf_counter() - started < 5


def test_an_element_of_an_array_field_has_the_element_type(builder: FileStateBuilder) -> None:
    """``LRUCache shard_[kNumShards];`` then ``shard_[Shard(h)].Insert(..)``: an
    ``LRUCache``'s method (an element of a pointer or a vector stays unknown)."""
    source = (b"namespace n {\nclass LRUCache {\n public:\n  int Insert(int k) { return k; }\n};\n"
              b"class Sharded {\n  LRUCache shard_[16];\n  int Shard(int h) { return h; }\n"
              b" public:\n  int Insert(int h) { return shard_[Shard(h)].Insert(h) + "
              b"shard_[0].Insert(h); }\n};\n}\n")  # fmt: skip
    states = {"cache.cc": build_state(builder, "cache.cc", source)}
    assert ("n.Sharded.Insert", "n.LRUCache.Insert") in joined_callers(states, "cpp")


def test_a_constructor_builds_its_bases_written_or_not(builder: FileStateBuilder) -> None:
    source = (b"namespace n {\nclass Iterator {\n public:\n  Iterator() {}\n};\n"
              b"class Empty : public Iterator {\n public:\n  Empty() {}\n};\n"
              b"class Merging : public Iterator {\n public:\n  Merging(int k) : Iterator() {}\n"
              b"  int Size() { return 0; }\n};\n}\n")  # fmt: skip
    callers = joined_callers({"it.cc": build_state(builder, "it.cc", source)}, "cpp")
    assert ("n.Empty.Empty", "n.Iterator") in callers  # not written: C++ runs it anyway
    assert ("n.Merging.Merging", "n.Iterator") in callers
    assert not any(src == "n.Merging.Size" for src, _ in callers)  # a method builds nothing


def test_a_nested_struct_defined_out_of_its_class(builder: FileStateBuilder) -> None:
    """``struct TableBuilder::Rep { BlockBuilder data_block; };`` in the .cc: a class named
    by its outer class, whose fields type ``r->data_block.Add()``."""
    source = (b"namespace n {\nclass BlockBuilder {\n public:\n  void Add(int k) {}\n};\n"
              b"struct TableBuilder::Rep {\n  BlockBuilder data_block;\n  int n;\n};\n"
              b"void TableBuilder::Add(int k) {\n  Rep* r = rep_;\n"
              b"  r->data_block.Add(k);\n}\n}\n")  # fmt: skip
    state = build_state(builder, "table_builder.cc", source)
    kinds = {s.qualified_name: s.kind for s in state.symbols}
    assert kinds["n.TableBuilder.Rep"] is SymbolKind.CLASS
    assert "n.TableBuilder.Rep.data_block" in kinds and "n.data_block" not in kinds
    assert ("n.TableBuilder.Add", "n.BlockBuilder.Add") in joined_callers(
        {"table_builder.cc": state}, "cpp"
    )


def test_a_call_of_a_constructor_builds_the_class(builder: FileStateBuilder) -> None:
    source = (b"namespace n {\nclass Status {\n public:\n"
              b"  Status(int code) : code_(code) {}\n"
              b"  static Status NotFound() { return Status(1); }\n"
              b" private:\n  int code_;\n};\n}\n")  # fmt: skip
    state = build_state(builder, "status.h", source)
    built = {(e.src.rsplit("::", 1)[-1], e.dst.rsplit("::", 1)[-1]) for e in state.edges
             if e.type is EdgeType.INSTANTIATES}  # fmt: skip
    assert ("n.Status.NotFound", "n.Status") in built  # the class, never its constructor
    assert not any(e.dst.endswith("::n.Status.Status") for e in state.edges
                   if e.type is EdgeType.CALLS)  # fmt: skip


def test_cpp_broken_code_keeps_its_last_good_state() -> None:
    builder = FileStateBuilder()
    target = FileRef("t", "r", "main", "a.cc", 1)
    good = builder.build(target, b"namespace n {\nint f() { return g(); }\n}\n")
    broken = builder.build(FileRef("t", "r", "main", "a.cc", 2),
                           b"namespace n {\nint f( { return g(; }\n", good)  # fmt: skip
    assert "n.f" in {s.qualified_name for s in broken.symbols}
    assert broken.flags.has_errors


def test_owning_pointers_and_standard_containers_reach_what_they_hold(
    builder: FileStateBuilder,
) -> None:
    """``std::unique_ptr<State> state_;`` declared in the header, ``state_->Get()`` in the
    .cc: a ``State``'s method (yaml-cpp's ``Emitter`` reaches its state so 131 times); an
    element of a ``std::vector`` or a value of a ``std::map`` is the element's type; a
    template of the project's own holds nothing the call reaches."""
    header = (b"namespace n {\nclass State {\n public:\n  int Get() const { return 1; }\n};\n"
              b"template <typename T> class Holder {\n public:\n  int Get() const { return 0; }\n"
              b"};\nclass Emitter {\n public:\n  int Good() const;\n  int Each() const;\n"
              b" private:\n  std::unique_ptr<State> state_;\n  std::vector<State*> states_;\n"
              b"  std::map<int, State> by_id_;\n  Holder<State> holder_;\n};\n}\n")  # fmt: skip
    source = (b"namespace n {\nint Emitter::Good() const { return state_->Get(); }\n"
              b"int Emitter::Each() const {\n  std::shared_ptr<State> shared = nullptr;\n"
              b"  return states_[0]->Get() + by_id_.at(1).Get() + shared->Get();\n}\n"
              b"int Use(const std::optional<State>& maybe, Holder<State> h) {\n"
              b"  return maybe->Get() + h.Get();\n}\n}\n")  # fmt: skip
    states = {"emitter.h": build_state(builder, "emitter.h", header),
              "emitter.cc": build_state(builder, "emitter.cc", source)}  # fmt: skip
    callers = joined_callers(states, "cpp")
    assert ("n.Emitter.Good", "n.State.Get") in callers  # a field of another file's class
    assert ("n.Emitter.Each", "n.State.Get") in callers
    assert ("n.Use", "n.State.Get") in callers  # std::optional's ->
    assert ("n.Use", "n.Holder.Get") in callers  # the project's template: its own method


def test_a_type_alias_of_another_file_reaches_the_class_it_names(
    builder: FileStateBuilder,
) -> None:
    """yaml-cpp's ``ptr.h``: ``using shared_node_ref = std::shared_ptr<node_ref>;``, a field
    ``shared_node_ref m_pRef;`` in ``node.h``, ``m_pRef->is_defined()``: ``node_ref``'s. The
    alias is a class inheriting what it names; an alias of a container or a number names
    no class."""
    ptr = (b"namespace n {\nclass node_ref;\nusing shared_node_ref = std::shared_ptr<node_ref>;\n"
           b"typedef node_ref plain_ref;\nusing names = std::vector<std::string>;\n"
           b"typedef int count_t;\n}\n")  # fmt: skip
    ref = (b"namespace n {\nclass node_ref {\n public:\n"
           b"  bool is_defined() const { return 1; }\n};\n}\n")  # fmt: skip
    node = (b"namespace n {\nclass node {\n public:\n  bool is_defined() const "
            b"{ return m_pRef->is_defined(); }\n"
            b"  bool plain() const { return m_plain.is_defined(); }\n"
            b" private:\n  shared_node_ref m_pRef;\n  plain_ref m_plain;\n};\n}\n")  # fmt: skip
    states = {"ptr.h": build_state(builder, "ptr.h", ptr),
              "node_ref.h": build_state(builder, "node_ref.h", ref),
              "node.h": build_state(builder, "node.h", node)}  # fmt: skip
    callers = joined_callers(states, "cpp")
    assert ("n.node.is_defined", "n.node_ref.is_defined") in callers
    assert ("n.node.plain", "n.node_ref.is_defined") in callers
    classes = {s.qualified_name for s in states["ptr.h"].symbols if s.kind is SymbolKind.CLASS}
    assert {"n.shared_node_ref", "n.plain_ref"} <= classes
    inherits = [e for e in states["ptr.h"].edges if e.type is EdgeType.INHERITS_FROM]
    assert len(inherits) == 2, inherits  # names and count_t inherit nothing


def test_a_local_built_with_bare_arguments_is_not_a_function_declaration(
    builder: FileStateBuilder,
) -> None:
    """``Repairer repairer(dbname, options);`` in a body reads, to the grammar, as a function
    declaration taking the types ``dbname`` and ``options``; C++ builds the object there (the
    parse g++ makes). A prototype out of a body stays a declaration."""
    source = (b"namespace n {\nclass Repairer {\n public:\n  int Run() { return 0; }\n};\n"
              b"int Prototype(Repairer);\n"
              b"int RepairDB(int dbname, int options) {\n"
              b"  Repairer repairer(dbname, options);\n"
              b"  return repairer.Run();\n}\n}\n")  # fmt: skip
    state = build_state(builder, "repair.cc", source)
    callers = joined_callers({"repair.cc": state}, "cpp")
    assert ("n.RepairDB", "n.Repairer") in callers  # built
    assert ("n.RepairDB", "n.Repairer.Run") in callers  # the local has the class's type
    assert {src for src, dst in callers if dst == "n.Repairer"} == {"n.RepairDB"}


def test_a_constructor_builds_the_fields_its_class_holds_by_value(
    builder: FileStateBuilder,
) -> None:
    """``port::Mutex mutex_;`` in a class: each of its constructors runs ``Mutex()`` (g++
    lists it, written in the initializer list or not). A pointer, a reference, a template, a
    ``static`` member or a class of this file with no constructor written builds nothing, nor
    does a field the initializer list copies (``mutex_(m)``: g++ shows no copy)."""
    source = (b"namespace n {\nnamespace port {\nclass Mutex {\n public:\n  Mutex() {}\n};\n}\n"
              b"class Plain {\n public:\n  int x;\n};\n"
              b"class Cache {\n public:\n  Cache() : usage_(0) {}\n  explicit Cache(int c);\n"
              b" private:\n  port::Mutex mutex_;\n  port::Mutex locks_[4];\n"
              b"  port::Mutex* shared_;\n  port::Mutex& borrowed_;\n  Plain plain_;\n"
              b"  static port::Mutex global_;\n  std::unique_ptr<port::Mutex> owned_;\n"
              b"  int usage_;\n};\nCache::Cache(int c) : usage_(c) {}\n"
              b"class Copying {\n public:\n"
              b"  explicit Copying(const port::Mutex& m) : mutex_(m) {}\n"
              b" private:\n  port::Mutex mutex_;\n};\n}\n")  # fmt: skip
    state = build_state(builder, "cache.cc", source)
    callers = joined_callers({"cache.cc": state}, "cpp")
    built = {src for src, dst in callers if dst == "n.port.Mutex"}
    assert built == {"n.Cache.Cache"}  # both constructors: one name; Copying's copies it
    assert len([e for e in state.edges if e.type is EdgeType.INSTANTIATES]) == 2
    assert not any(dst == "n.Plain" for _, dst in callers)


def test_casts_template_aliases_delegating_overloads_and_brace_temporaries(
    builder: FileStateBuilder,
) -> None:
    """yaml-cpp's shapes: ``static_cast<const node_ref&>(*p).begin()`` is ``node_ref``'s;
    ``typedef AnchorDict<void*> AnchorMap;`` inherits ``AnchorDict``; ``Load(const char*)``
    calling ``Load(stream)`` reaches the other overloads, never itself; ``Guard<500> g(d);``
    and ``throw Deep{d};`` build their classes; ``Parser::Parser(int) : Parser()`` beside a
    class of another file builds the class, not its other constructor."""
    header = (b"namespace n {\nclass node_ref {\n public:\n  int begin() const { return 0; }\n};\n"
              b"template <typename T>\nclass AnchorDict {\n public:\n"
              b"  T Get(int a) const { return T(); }\n};\n"
              b"class Deep {\n public:\n  Deep(int d) {}\n};\n"
              b"template <int N>\nclass Guard {\n public:\n"
              b"  Guard(int d) { if (d > N) throw Deep{d}; }\n};\n"
              b"class Parser {\n public:\n  Parser();\n  Parser(int in);\n};\n}\n")  # fmt: skip
    source = (b"namespace n {\nclass node {\n public:\n"
              b"  int begin() const { return static_cast<const node_ref&>(*m_pRef).begin(); }\n"
              b"  void* Find(int a) { return m_anchors.Get(a); }\n"
              b" private:\n  typedef AnchorDict<void*> AnchorMap;\n"
              b"  node_ref* m_pRef;\n  AnchorMap m_anchors;\n};\n"
              b"int Load(int input) { return 0; }\n"
              b"int Load(const char* input) { return Load(1); }\n"
              b"int Handle(int depth) { Guard<500> guard(depth); return depth; }\n"
              b"Parser::Parser() {}\nParser::Parser(int in) : Parser() {}\n}\n")  # fmt: skip
    states = {"node.h": build_state(builder, "node.h", header),
              "node.cpp": build_state(builder, "node.cpp", source)}  # fmt: skip
    callers = joined_callers(states, "cpp")
    assert {
        ("n.node.begin", "n.node_ref.begin"),
        ("n.node.Find", "n.AnchorDict.Get"),
        ("n.Handle", "n.Guard"),
        ("n.Guard.Guard", "n.Deep"),
    } <= callers, sorted(callers)
    edges = {(e.type, e.src.rsplit("::", 1)[-1], e.dst.rsplit("::", 1)[-1])
             for e in states["node.cpp"].edges}  # fmt: skip
    assert (EdgeType.CALLS, "n.Load#2", "n.Load") in edges
    assert (EdgeType.CALLS, "n.Load#2", "n.Load#2") not in edges  # never itself by name
    built = {(src, dst) for kind, src, dst in edges if kind is EdgeType.INSTANTIATES}
    assert ("n.Parser.Parser#2", "n.Parser.Parser") not in built, built
    assert any(src == "n.Parser.Parser#2" and "Parser" in dst for src, dst in built), built
    assert ("n.Parser.Parser", "n.Parser") in callers  # the class, joined from the header
