"""Kotlin (issue #56): packages and imports (aliases too), classes, interfaces, objects and
companion objects, properties of the primary constructor, extension functions named by
their receiver, a base class built in the header, calls by declared and built types,
``this``/``super``, what a function returns; broken code keeping its last good state."""

from __future__ import annotations

from pathlib import Path

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.languages import language_for
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.schemas.state import FileState
from tests.conftest import build_state
from tests.key_joins import joined_callers

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "kotlin_shapes"


def _states(builder: FileStateBuilder) -> dict[str, FileState]:
    return {p.name: build_state(builder, f"kotlin_shapes/{p.name}", p.read_bytes())
            for p in sorted(SHAPES.iterdir())}  # fmt: skip


def test_kotlin_symbols(builder: FileStateBuilder) -> None:
    states = _states(builder)
    assert {s.language for s in states.values()} == {"kotlin"}
    assert language_for("build.gradle.kts", b"") == "kotlin"
    kinds = {s.qualified_name: s.kind.value for s in states["Shapes.kt"].symbols
             if s.kind not in (SymbolKind.FILE, SymbolKind.MODULE)}  # fmt: skip
    assert kinds == {
        "Shape": "interface", "Shape.area": "function", "Base": "class", "Base.name": "variable",
        "Base.log": "variable", "Base.describe": "function", "Square": "class",
        "Square.side": "variable", "Square.area": "function", "Square.describe": "function",
        "Square.scale": "function", "Square.unit": "function",  # a companion's: the class's
        "Shape.twice": "function",  # an extension: its receiver's
        "Registry": "class", "Registry.shapes": "variable", "Registry.register": "function",
        "Registry.total": "function", "totalOf": "function",
    }  # fmt: skip


def test_kotlin_calls_across_packages(builder: FileStateBuilder) -> None:
    """Checked by hand against the source; kotlinc's bytecode has the same calls (println,
    StringBuilder, mutableListOf, sumByDouble and toString are the standard library's;
    ``square.twice()`` on a receiver built by another file's function is not found)."""
    assert joined_callers(_states(builder), "kotlin") == {
        ("main", "Square.unit"),  # a companion object's function, through an import
        ("main", "Square"),  # Square(3.0) builds one
        ("main", "Registry.register"),  # an object's
        ("main", "Registry.total"),
        ("main", "Square.describe"),  # big: Square (declared)
        ("main", "Logger"),  # Log("app"): an import's alias
        ("main", "Logger.child"),  # log: what Log(..) builds
        ("main", "Logger.write"),  # what child returns
        ("main", "report"),  # the file's own
        ("report", "Square.scale"),  # a parameter's declared type
        ("report", "Square.describe"),  # what scale returns
        ("Base", "Logger"),  # a property's initializer
        ("Base.describe", "Logger.write"),  # log: built by Logger(name)
        ("Base.describe", "Shape.area"),  # bare: the interface's, of this
        ("Square", "Base"),  # Base("square") in the header
        ("Square.describe", "Base.describe"),  # super.describe()
        ("Square.describe", "Square.scale"),
        ("Square.describe", "Square.area"),  # scale(2.0).area(): what scale returns
        ("Square.scale", "Square"),
        ("Square.unit", "Square"),
        ("Shape.twice", "Shape.area"),  # bare in an extension: the receiver's
        ("Registry.total", "totalOf"),  # the package's function
        ("totalOf", "Shape.area"),  # { it.area() }: an element of shapes: List<Shape>
        ("Logger.write", "format"),
        ("Logger.child", "Logger"),
    }


def test_broken_kotlin_keeps_its_last_good_symbols(builder: FileStateBuilder) -> None:
    good = (SHAPES / "Logger.kt").read_bytes()
    before = build_state(builder, "Logger.kt", good)
    broken = good.replace(b"lines.append(format(prefix, line))", b"lines.append(format(prefix,")
    after = build_state(builder, "Logger.kt", broken, version=2, previous=before)
    assert after.flags.has_errors
    assert {"Logger.write", "Logger.child", "format"} <= {s.qualified_name for s in after.symbols}


def test_kotlin_imports_bind_names(builder: FileStateBuilder) -> None:
    state = build_state(builder, "Main.kt", (SHAPES / "Main.kt").read_bytes())
    imports = {(e.ref.name, e.ref.module) for e in state.edges
               if e.type is EdgeType.IMPORTS and e.ref is not None}  # fmt: skip
    assert imports == {("Registry", "acme.shapes"), ("Square", "acme.shapes"),
                       ("twice", "acme.shapes"), ("Logger", "acme.util")}  # fmt: skip


def test_chains_of_calls_and_collection_lambdas(builder: FileStateBuilder) -> None:
    source = b"""package b

class Builder {
    fun add(x: Int): Builder = this

    fun build(): Spec = Spec()
}

class Spec {
    fun size(): Int = 1
}

fun make(specs: List<Spec>): Int {
    Builder().add(1).add(2).build()
    return specs.map { spec -> spec.size() }.size
}
"""
    states = {"b.kt": build_state(builder, "b.kt", source)}
    called = {callee for caller, callee in joined_callers(states, "kotlin") if caller == "make"}
    assert called == {"Builder", "Builder.add", "Builder.build", "Spec.size"}
