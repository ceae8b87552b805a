"""C (issue #56): symbols of C's own kinds, calls resolved the way the linker does (the
file's own definitions first, then the program's one namespace), headers as imports, macros
that a walk steps through, ``#if`` branches of one function, and broken code that keeps its
last good state."""

from __future__ import annotations

from patchstream.parsing.c_language import c_parameters, macro_calls
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.modules import C_GLOBAL
from patchstream.query.through_macros import through_macros
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.stores.graph.base import Neighbor, StoredSymbol
from patchstream.stores.graph.keys import symbol_key
from tests.conftest import build_state

SOURCE = b"""#include "util.h"
#include "../include/api/kv.h"
#include <stdio.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define LOG(fmt) log_line(__FILE__, "call(" fmt)

typedef struct point { int x; } point_t;
typedef struct { int y; } anon_t;
union value { int i; float f; };
enum color { RED, GREEN };
static int counter = 0;
int shared_total;

int *make(int n);

/* Copies every string. */
static char **dup_all(char **v) {
    return v;
}

int run(int (*visit)(int), int n) {
    LOG("run");
    visit(n);
    dup_all(0);
    printf("%d", MAX(n, 1));
    return helper(n);
}
"""


def _edges(state, kind: EdgeType) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {(e.src.rsplit("::", 1)[-1], e.dst) for e in state.edges if e.type is kind}


def test_c_symbols_of_its_own_kinds(builder: FileStateBuilder) -> None:
    state = build_state(builder, "src/main.c", SOURCE)
    assert state.language == "c" and not state.flags.raised()
    kinds = {s.qualified_name: s.kind for s in state.symbols}
    assert kinds == {
        "src/main.c": SymbolKind.FILE,
        "src/main": SymbolKind.MODULE,
        "MAX": SymbolKind.FUNCTION,
        "LOG": SymbolKind.FUNCTION,  # function-like macros
        "point": SymbolKind.CLASS,
        "anon_t": SymbolKind.CLASS,
        "value": SymbolKind.CLASS,
        "color": SymbolKind.CLASS,
        "counter": SymbolKind.VARIABLE,
        "shared_total": SymbolKind.VARIABLE,
        "dup_all": SymbolKind.FUNCTION,
        "run": SymbolKind.FUNCTION,
    }  # fmt: skip  (a prototype, ``make``, is not a definition)
    dup = next(s for s in state.symbols if s.name == "dup_all")
    assert dup.doc == "Copies every string." and dup.signature == "static char **dup_all(char **v)"
    assert state.chunks  # searchable like any code


def test_c_calls_resolve_in_the_file_then_in_the_programs_namespace(
    builder: FileStateBuilder,
) -> None:
    state = build_state(builder, "src/main.c", SOURCE)
    calls = _edges(state, EdgeType.CALLS)
    assert ("run", "r::src/main.c::dup_all") in calls  # the file's own static function
    assert ("run", "r::src/main.c::MAX") in calls and ("run", "r::src/main.c::LOG") in calls
    named = {e.ref.name: e.ref.module for e in state.edges if e.ref is not None
             and e.type is EdgeType.CALLS}  # fmt: skip
    assert named["helper"] == C_GLOBAL and named["printf"] == C_GLOBAL  # any file's
    assert named["visit"] is None  # a parameter: whatever the caller passes, never resolved
    assert named["log_line"] == C_GLOBAL  # what LOG expands to: the macro calls it
    assert "call" not in named  # ``call(`` inside a string literal of the macro is no call
    imports = {(e.ref.module, e.ref.name) for e in state.edges if e.type is EdgeType.IMPORTS
               and e.ref is not None}  # fmt: skip
    # Beside the file, and from the repository's root; never a system header.
    assert imports == {("src/util", ""), ("util", ""), ("include/api/kv", "")}


def test_c_if_branches_of_one_function_are_each_called(builder: FileStateBuilder) -> None:
    source = (b"#ifdef FAST\nstatic int pick(void) { return 1; }\n#else\n"
              b"static int pick(void) { return 2; }\n#endif\n"
              b"int main(void) { return pick(); }\n")  # fmt: skip
    state = build_state(builder, "m.c", source)
    picks = sorted(s.id for s in state.symbols if s.name == "pick")
    assert picks == ["r::m.c::pick", "r::m.c::pick#2"]
    assert all(s.alternative for s in state.symbols if s.name == "pick")
    assert {dst for src, dst in _edges(state, EdgeType.CALLS) if src == "main"} == set(picks)


def test_c_broken_code_keeps_its_last_good_state(builder: FileStateBuilder) -> None:
    good = build_state(builder, "src/main.c", SOURCE)
    broken_source = SOURCE.replace(b"static char **dup_all(char **v) {\n    return v;",
                                   b"static char **dup_all(char **v {\n    return (v")  # fmt: skip
    broken = build_state(builder, "src/main.c", broken_source, version=2, previous=good)
    assert broken.flags.has_errors
    kept = next(s for s in good.symbols if s.name == "dup_all")
    assert kept in broken.symbols
    assert {s.id for s in good.symbols} <= {s.id for s in broken.symbols}


def test_macro_text_and_parameters() -> None:
    assert macro_calls({"s", "k"}, "kv_get((s), (k)) + s(k) + sizeof(x)") == ["kv_get"]
    assert macro_calls(set(), "do { if (x) f(\"g(\", 'h') ; } while (0)") == ["f"]
    from tree_sitter import Parser

    from patchstream.parsing.languages import get_language

    source = b"int apply(int (*in)(void *), void *desc, char **argv) { return in(desc); }"
    definition = Parser(get_language("c")).parse(source).root_node.named_children[0]
    read = lambda node: source[node.start_byte : node.end_byte].decode()  # noqa: E731
    assert c_parameters(definition, read) == ["in", "desc", "argv"]


def _neighbor(name: str, depth: int = 1, signature: str | None = None) -> Neighbor:
    symbol = StoredSymbol(id=f"r::x.c::{name}", kind="function", name=name,
                          qualified_name=name, repo="r", ref="main", path="x.c", start_line=1,
                          end_line=1, signature=signature, language="c")  # fmt: skip
    return Neighbor(symbol, depth, "exact")


def test_walks_step_through_macros() -> None:
    """Who calls ``deflateInit_`` is also whoever writes ``deflateInit(...)``, the macro
    expanding to it: the macro's row stays, the rows beyond it come at its depth."""
    macro = _neighbor("deflateInit", signature="#define deflateInit(s, l) deflateInit_(s, l)")
    inner = _neighbor("WRAP", signature="#  define WRAP(s) deflateInit(s, 9)")
    beyond = {
        macro.symbol.id: [_neighbor("compress2", 1), inner],
        inner.symbol.id: [_neighbor("gzopen", 1), _neighbor("compress2", 1)],
    }
    found = through_macros([_neighbor("direct"), macro], lambda sid: beyond.get(sid, []))
    assert [(n.symbol.name, n.depth) for n in found] == [
        ("direct", 1), ("deflateInit", 1), ("compress2", 1), ("WRAP", 1), ("gzopen", 1),
    ]  # fmt: skip
    plain = [_neighbor("f", signature="int f(void)")]
    assert through_macros(plain, lambda sid: [_neighbor("never")]) == plain


STATICS = b"""#include "x.h"

MEM_STATIC unsigned hash4(unsigned u) { return u * 3; }

FORCE_INLINE_TEMPLATE
HOT_ATTR
size_t compress_generic(int level) { return hash4(level); }

static int init(void) { return 0; }

int api_entry(void) { return init(); }
"""


def test_c_attribute_macros_above_a_function_are_its_signature(builder: FileStateBuilder) -> None:
    """``FORCE_INLINE_TEMPLATE`` on the line above a function reads as a declaration missing
    its ``;``: its words are the function's (inline, static), not a variable of their own."""
    state = build_state(builder, "lib/lazy.c", STATICS)
    signatures = {s.name: s.signature for s in state.symbols if s.kind is SymbolKind.FUNCTION}
    assert signatures["compress_generic"] == (
        "FORCE_INLINE_TEMPLATE HOT_ATTR size_t compress_generic(int level)"
    )
    assert signatures["api_entry"] == "int api_entry(void)"  # a full declaration is not one
    assert "HOT_ATTR" not in {s.name for s in state.symbols}


def test_c_static_definitions_of_a_c_file_are_not_the_programs(
    builder: FileStateBuilder,
) -> None:
    """Other files' calls find a ``.c`` file's ``static`` functions (also spelled
    ``MEM_STATIC``, ``FORCE_INLINE...``) nowhere: their keys are the file's, not the
    program's one namespace. A header's ``static inline`` stays every includer's."""
    state = build_state(builder, "lib/lazy.c", STATICS)
    header = build_state(builder, "lib/x.h", b"static inline int peek(int v) { return v; }\n")
    keys = {s.name: symbol_key("t|r|main", "lib/lazy", s) for s in state.symbols
            if s.kind is SymbolKind.FUNCTION}  # fmt: skip
    assert keys == {
        "hash4": "t|r|main|lib/lazy|hash4",
        "compress_generic": "t|r|main|lib/lazy|compress_generic",
        "init": "t|r|main|lib/lazy|init",
        "api_entry": f"t|r|main|{C_GLOBAL}|api_entry",
    }
    [peek] = [s for s in header.symbols if s.name == "peek"]
    assert symbol_key("t|r|main", "lib/x", peek) == f"t|r|main|{C_GLOBAL}|peek"
    # The file's own calls still reach its static functions.
    assert ("api_entry", "lib/lazy.c::init") in {
        (e.src.rsplit("::", 1)[-1], e.dst.split("::", 1)[-1]) for e in state.edges
        if e.type is EdgeType.CALLS
    }  # fmt: skip
