"""Per-language fixtures: specific symbols and every edge type, with exact ids."""

from __future__ import annotations

import pytest

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.schemas.state import FileState
from tests.conftest import FIXTURES, build_state


def _state(builder: FileStateBuilder, rel: str) -> FileState:
    return build_state(builder, rel, (FIXTURES / rel).read_bytes())


def _edges(state: FileState) -> set[tuple[str, str, str]]:
    prefix = f"r::{state.path}::"

    def short(value: str) -> str:
        return value.removeprefix(prefix)

    return {(e.type.value, short(e.src), short(e.dst)) for e in state.edges}


def _kinds(state: FileState) -> dict[str, SymbolKind]:
    return {s.qualified_name: s.kind for s in state.symbols}


CASES = {
    "python/pkg/shapes.py": {
        "language": "python",
        "module": "python.pkg.shapes",
        "symbols": {
            "Shape": SymbolKind.CLASS,
            "Shape.area": SymbolKind.FUNCTION,
            "Shape.sides": SymbolKind.VARIABLE,
            "Circle.__init__": SymbolKind.FUNCTION,
            "UNIT": SymbolKind.VARIABLE,
            "counter": SymbolKind.VARIABLE,
            "make_circle": SymbolKind.FUNCTION,
        },
        "edges": {
            ("DEFINES", "<module>", "Shape"),
            ("DEFINES", "Shape", "Shape.area"),
            ("CALLS", "Shape.describe", "Shape.area"),
            ("CALLS", "main", "make_circle"),
            ("CALLS", "Remote.run", "ref:helper@python.pkg.util"),
            ("CALLS", "make_circle", "ref:registry.add@python.pkg"),
            ("IMPORTS", "<module>", "ref:@math"),
            ("IMPORTS", "<module>", "ref:OrderedDict@collections"),
            ("IMPORTS", "<module>", "ref:registry@python.pkg"),
            ("INHERITS_FROM", "Circle", "Shape"),
            ("INHERITS_FROM", "Remote", "ref:Base@python.pkg.util"),
            ("INSTANTIATES", "make_circle", "Circle"),
            ("INSTANTIATES", "make_circle", "ref:OrderedDict@collections"),
            ("OVERRIDES", "Circle.area", "Shape.area"),
        },
    },
    "javascript/app.js": {
        "language": "javascript",
        "module": "javascript/app",
        "symbols": {
            "Shape": SymbolKind.CLASS,
            "Shape.describe": SymbolKind.FUNCTION,
            "Shape.sides": SymbolKind.VARIABLE,
            "LIMIT": SymbolKind.VARIABLE,
            "makeCircle": SymbolKind.FUNCTION,
            "main": SymbolKind.FUNCTION,
        },
        "edges": {
            ("DEFINES", "Circle", "Circle.area"),
            ("CALLS", "Shape.describe", "Shape.area"),
            ("CALLS", "main", "makeCircle"),
            ("CALLS", "main", "ref:join@path"),
            ("CALLS", "Remote.run", "ref:helper@javascript/lib/util"),
            ("IMPORTS", "<module>", "ref:Base@javascript/lib/util"),
            ("INHERITS_FROM", "Circle", "Shape"),
            ("INHERITS_FROM", "Remote", "ref:Base@javascript/lib/util"),
            ("INSTANTIATES", "makeCircle", "Circle"),
            ("OVERRIDES", "Circle.area", "Shape.area"),
        },
    },
    "typescript/app.ts": {
        "language": "typescript",
        "module": "typescript/app",
        "symbols": {
            "HasArea": SymbolKind.INTERFACE,
            "HasArea.area": SymbolKind.FUNCTION,
            "Shape": SymbolKind.CLASS,
            "Circle.name": SymbolKind.FUNCTION,
            "LIMIT": SymbolKind.VARIABLE,
            "Shape.sides": SymbolKind.VARIABLE,
            "main": SymbolKind.FUNCTION,
        },
        "edges": {
            ("DEFINES", "HasArea", "HasArea.area"),
            ("CALLS", "Circle.name", "ref:helper@lib/util"),
            ("CALLS", "main", "makeCircle"),
            ("IMPORTS", "<module>", "ref:default@typescript/default"),
            ("INHERITS_FROM", "Circle", "Shape"),
            ("INHERITS_FROM", "Circle", "Named"),
            ("INHERITS_FROM", "Named", "HasArea"),
            ("INHERITS_FROM", "Shape", "HasArea"),
            ("INSTANTIATES", "makeCircle", "Circle"),
            ("INSTANTIATES", "main", "ref:default@typescript/default"),
            ("CALLBACK_PARAM", "eachShape", "Shape"),
            ("OVERRIDES", "Circle.area", "Shape.area"),
            ("OVERRIDES", "Circle.name", "Named.name"),
            ("OVERRIDES", "Shape.area", "HasArea.area"),
        },
    },
    "typescript/view.tsx": {
        "language": "tsx",
        "module": "typescript/view",
        "symbols": {"Props": SymbolKind.INTERFACE, "CircleView": SymbolKind.FUNCTION},
        "edges": {
            ("CALLS", "CircleView", "ref:makeCircle@typescript/app"),
            ("IMPORTS", "<module>", "ref:makeCircle@typescript/app"),
        },
    },
    "go/shapes.go": {
        "language": "go",
        "module": "go",
        "symbols": {
            "Shape": SymbolKind.INTERFACE,
            "Shape.Area": SymbolKind.FUNCTION,
            "Base": SymbolKind.CLASS,
            "Circle.Area": SymbolKind.FUNCTION,
            "Unit": SymbolKind.VARIABLE,
            "counter": SymbolKind.VARIABLE,
        },
        "edges": {
            ("DEFINES", "Circle", "Circle.Area"),
            ("CALLS", "Main", "NewCircle"),
            ("CALLS", "Describe", "ref:Sprintf@fmt"),
            ("CALLS", "Describe", "ref:Log@example.com/acme/util"),
            ("IMPORTS", "<module>", "ref:@math"),
            ("INHERITS_FROM", "Circle", "Base"),
            ("INSTANTIATES", "NewCircle", "Circle"),
            ("OVERRIDES", "Circle.Area", "Base.Area"),
        },
    },
    "java/com/acme/shapes/Shapes.java": {
        "language": "java",
        "module": "com.acme.shapes",
        "symbols": {
            "HasArea": SymbolKind.INTERFACE,
            "Shape": SymbolKind.CLASS,
            "Circle.Circle": SymbolKind.FUNCTION,
            "Circle.r": SymbolKind.VARIABLE,
            "Shapes.makeCircle": SymbolKind.FUNCTION,
        },
        "edges": {
            ("DEFINES", "Shapes", "Shapes.makeCircle"),
            ("CALLS", "Shapes.main", "Shapes.makeCircle"),
            ("CALLS", "Shapes.makeCircle", "ref:Helper.check@com.acme.util"),
            ("CALLS", "Shapes.makeCircle", "ref:info@com.acme.util.Log"),
            ("IMPORTS", "<module>", "ref:List@java.util"),
            ("INHERITS_FROM", "Circle", "Shape"),
            ("INHERITS_FROM", "Shape", "HasArea"),
            ("INSTANTIATES", "Shapes.makeCircle", "Circle"),
            ("OVERRIDES", "Circle.area", "Shape.area"),
            ("OVERRIDES", "Shape.area", "HasArea.area"),
        },
    },
    "rust/src/shapes.rs": {
        "language": "rust",
        "module": "crate::shapes",
        "symbols": {
            "HasArea": SymbolKind.INTERFACE,
            "HasArea.describe": SymbolKind.FUNCTION,
            "Circle": SymbolKind.CLASS,
            "Circle.new": SymbolKind.FUNCTION,
            "UNIT": SymbolKind.VARIABLE,
            "COUNTER": SymbolKind.VARIABLE,
        },
        "edges": {
            ("DEFINES", "Circle", "Circle.new"),
            ("CALLS", "main", "Circle.new"),
            ("CALLS", "main", "ref:helper@crate::util"),
            ("IMPORTS", "<module>", "ref:Base@crate::util"),
            ("IMPORTS", "<module>", "ref:*@crate::registry"),
            ("INHERITS_FROM", "Circle", "HasArea"),
            ("INHERITS_FROM", "Circle", "ref:fmt.Display@std"),
            ("INSTANTIATES", "Circle.new", "Circle"),
            ("OVERRIDES", "Circle.area", "HasArea.area"),
        },
    },
}


@pytest.mark.parametrize("rel", sorted(CASES))
def test_fixture_symbols_and_edges(builder: FileStateBuilder, rel: str) -> None:
    case = CASES[rel]
    state = _state(builder, rel)
    assert state.language == case["language"]
    assert state.flags.raised() == []
    kinds = _kinds(state)
    for name, kind in case["symbols"].items():
        assert kinds.get(name) == kind, f"{rel}: {name} should be a {kind}"
    assert kinds[rel] == SymbolKind.FILE
    modules = [s for s in state.symbols if s.kind is SymbolKind.MODULE]
    assert [m.qualified_name for m in modules] == [case["module"]]
    missing = case["edges"] - _edges(state)
    assert not missing, f"{rel}: missing edges {sorted(missing)}"


@pytest.mark.parametrize("rel", sorted(CASES))
def test_every_edge_type_is_extracted(builder: FileStateBuilder, rel: str) -> None:
    types = {e.type for e in _state(builder, rel).edges}
    # Return types are read from Python annotations and Go results only.
    returns = {EdgeType.RETURNS} if rel.split("/")[0] in ("python", "go") else set()
    # Callback parameter types are read from TypeScript signatures only.
    if rel.startswith("typescript/"):
        returns.add(EdgeType.CALLBACK_PARAM)
    expected = (
        set(EdgeType) - {EdgeType.RETURNS, EdgeType.CALLBACK_PARAM} | returns
        if rel != "typescript/view.tsx"
        else {
            EdgeType.DEFINES,
            EdgeType.CALLS,
            EdgeType.IMPORTS,
        }
    )
    assert expected <= types


@pytest.mark.parametrize("rel", sorted(CASES))
def test_local_edges_point_at_symbols_of_the_file(builder: FileStateBuilder, rel: str) -> None:
    state = _state(builder, rel)
    ids = {s.id for s in state.symbols}
    for edge in state.edges:
        assert edge.src in ids, edge
        assert edge.ref is not None or edge.dst in ids, edge


def test_signatures_and_docs(builder: FileStateBuilder) -> None:
    py = {s.qualified_name: s for s in _state(builder, "python/pkg/shapes.py").symbols}
    assert py["make_circle"].signature == "def make_circle(r: float) -> Circle"
    assert py["make_circle"].doc == "Build a circle."
    assert py["Shape"].doc == "A shape with an area."
    assert py["Shape.area"].parent_id == "r::python/pkg/shapes.py::Shape"
    go = {s.qualified_name: s for s in _state(builder, "go/shapes.go").symbols}
    assert go["Circle.Area"].signature == "func (c *Circle) Area() float64"
    assert go["Circle.Area"].doc == "Area of the circle."
    assert go["Circle.Area"].parent_id == "r::go/shapes.go::Circle"
    java = {
        s.qualified_name: s for s in _state(builder, "java/com/acme/shapes/Shapes.java").symbols
    }
    assert java["Shapes.makeCircle"].doc == "Build a circle."
    assert java["HasArea"].doc == "Something with an area."
    rust = {s.qualified_name: s for s in _state(builder, "rust/src/shapes.rs").symbols}
    assert rust["Circle.new"].signature == "pub fn new(r: f64) -> Self"
    assert rust["Circle.new"].doc == "Build a circle."
    assert rust["HasArea"].doc == "Anything with an area."
    ts = {s.qualified_name: s for s in _state(builder, "typescript/app.ts").symbols}
    assert ts["HasArea"].doc == "Anything with an area."
    assert ts["makeCircle"].signature == "function makeCircle(r: number): Circle"


def test_unknown_language_gets_a_file_node(builder: FileStateBuilder) -> None:
    state = build_state(builder, "docs/notes.txt", b"just text\n")
    assert state.language is None
    assert [s.kind for s in state.symbols] == [SymbolKind.FILE]
    assert state.edges == () and [c.text for c in state.chunks] == ["just text"]
    assert state.flags.raised() == ["no_grammar"]


def test_a_language_with_no_grammar_is_plain_text_and_says_so(builder: FileStateBuilder) -> None:
    """Issue #56: nothing silent. A Zig file has no symbols here, but its text is searchable
    (cut by the token cap, never at ``#`` lines as Markdown is) and it is flagged."""
    body = "\n".join(["#include <x>", *(f"fn f{i}() void {{ g{i}(); }}" for i in range(400))])
    state = build_state(builder, "src/main.zig", body.encode())
    assert state.flags.no_grammar and [s.kind for s in state.symbols] == [SymbolKind.FILE]
    chunks = sorted(state.chunks, key=lambda c: c.start_line)
    assert len(chunks) > 1 and chunks[0].text.startswith("#include <x>\nfn f0()")
    covered = [n for c in chunks for n in range(c.start_line, c.end_line + 1)]
    assert covered == list(range(1, 402))  # every line once
    assert "fn f399() void" in chunks[-1].text


def test_ids_are_stable_across_unrelated_edits(builder: FileStateBuilder) -> None:
    source = (FIXTURES / "python/pkg/shapes.py").read_bytes()
    edited = b"# a new header comment\n\n\n" + source.replace(b"return 0", b"return 0  # none")
    before = {s.id for s in build_state(builder, "p.py", source).symbols}
    after = {s.id for s in build_state(builder, "p.py", edited, version=2).symbols}
    assert before == after


def test_duplicate_names_get_distinct_ids(builder: FileStateBuilder) -> None:
    state = build_state(builder, "d.py", b"def f():\n    return 1\n\n\ndef f():\n    return 2\n")
    ids = sorted(s.id for s in state.symbols if s.kind is SymbolKind.FUNCTION)
    assert ids == ["r::d.py::f", "r::d.py::f#2"]
