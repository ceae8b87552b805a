from __future__ import annotations

from patchstream.schemas.graph import Reference, Symbol, SymbolKind
from patchstream.stores.graph.keys import reference_keys, symbol_key

S = "t|app|main"


def _keys(name: str, module: str | None, language: str) -> list[str]:
    return [
        k.removeprefix(S + "|")
        for k in reference_keys(S, Reference(name=name, module=module), language)
    ]


def test_python_keys_try_every_split_of_the_dotted_path() -> None:
    assert _keys("helper", "pkg.util", "python") == [
        "pkg.util.helper|",
        "pkg.util|helper",
        "pkg|util.helper",
    ]
    assert _keys("", "os.path", "python") == ["os.path|", "os|path"]


def test_rust_go_and_js_notation() -> None:
    assert "crate::util|helper" in _keys("helper", "crate::util", "rust")
    assert _keys("Log", "example.com/acme/util", "go") == [
        "example.com/acme/util|Log",
        "acme/util|Log",
        "util|Log",
    ]
    assert _keys("helper", "src/lib/util", "typescript") == ["src/lib/util|helper"]


def test_unresolvable_references_keep_a_key_that_matches_no_symbol() -> None:
    assert _keys("print", None, "python") == ["~ref:print"]
    assert _keys("*", "pkg", "python") == ["~ref:*@pkg"]


def test_symbol_keys() -> None:
    def sym(kind: SymbolKind, qualified: str) -> Symbol:
        return Symbol(
            id=f"app::a.py::{qualified}",
            kind=kind,
            name=qualified,
            qualified_name=qualified,
            path="a.py",
            start_line=1,
            end_line=1,
        )

    assert symbol_key(S, "pkg.a", sym(SymbolKind.FUNCTION, "Job.run")) == f"{S}|pkg.a|Job.run"
    assert symbol_key(S, "pkg.a", sym(SymbolKind.MODULE, "pkg.a")) == f"{S}|pkg.a|"
    assert symbol_key(S, "pkg.a", sym(SymbolKind.FILE, "a.py")) is None


def test_only_the_last_python_definition_of_a_name_is_findable() -> None:
    """Overloads then the implementation: references from other files find the last one."""
    from patchstream.parsing.filestate import FileStateBuilder
    from patchstream.stores.graph.keys import shadowed
    from tests.conftest import build_state

    source = (
        b"from typing import overload\n\n\n@overload\ndef command(x: int) -> int: ...\n\n\n"
        b"@overload\ndef command(x: str) -> str: ...\n\n\ndef command(x):\n    return x\n"
    )
    state = build_state(FileStateBuilder(), "pkg/cli.py", source)
    hidden = shadowed(state.symbols, state.language)
    assert hidden == {"r::pkg/cli.py::command", "r::pkg/cli.py::command#2"}
    assert shadowed(state.symbols, "go") == set()


def test_swift_library_types_reach_the_protocols_a_project_extends() -> None:
    """``String.wrapped`` is also StringProtocol's (and the rest of String's conformances);
    the head of a join too (``Array.allArguments().merging``); an extension's method in a file
    without its type is owned by the type's key (the graph's ``okey``)."""
    keys = _keys("String.wrapped", "<sw>.HelpGenerator", "swift")
    assert {"<sw>|String.wrapped", "<sw>|StringProtocol.wrapped", "<sw>|Sequence.wrapped"} <= set(
        keys
    )
    joined = _keys("Array.allArguments().merging", "<sw>.Dump", "swift")
    assert "<sw>|BidirectionalCollection.allArguments().merging" in joined
    assert not any("StringProtocol" in key for key in _keys("Square.area", "<sw>.Shapes", "swift"))
    from patchstream.stores.graph.keys import owner_key

    method = Symbol(id="app::H.swift::NameSpecification.names", kind=SymbolKind.FUNCTION,
                    name="names", qualified_name="NameSpecification.names", path="H.swift",
                    language="swift", start_line=3, end_line=5, parent_id="app::H.swift::<module>",
                    signature="func names() -> [Name]")  # fmt: skip
    assert owner_key(S, method, "app::H.swift::<module>") == f"{S}|<sw>|NameSpecification"
