"""Ruby (issue #56), first version: modules, classes, methods (``def self.m`` named as the
class's), constants; a bare name is a call unless a local of that name is in scope;
constants looked up from where they are written outward, through bases and mixins;
``Foo.new``, ``new`` in a class method, ``super``, instance variables built with ``new``,
a receiver named as a project class; broken code keeping its last good state."""

from __future__ import annotations

from pathlib import Path

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.languages import language_for
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.schemas.state import FileState
from tests.conftest import build_state
from tests.key_joins import joined_callers

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "ruby_shapes"


def _states(builder: FileStateBuilder) -> dict[str, FileState]:
    return {p.name: build_state(builder, f"ruby_shapes/{p.name}", p.read_bytes())
            for p in sorted(SHAPES.iterdir())}  # fmt: skip


def test_ruby_symbols(builder: FileStateBuilder) -> None:
    states = _states(builder)
    assert {s.language for s in states.values()} == {"ruby"}
    assert language_for("Rakefile.rake", b"") == "ruby"
    kinds = {s.qualified_name: s.kind.value for s in states["shapes.rb"].symbols
             if s.kind not in (SymbolKind.FILE, SymbolKind.MODULE)}  # fmt: skip
    assert kinds == {
        "Acme": "class", "Acme.Describes": "class", "Acme.Describes.describe": "function",
        "Acme.Base": "class", "Acme.Base.initialize": "function", "Acme.Base.report": "function",
        "Acme.Square": "class", "Acme.Square.initialize": "function",
        "Acme.Square.area": "function", "Acme.Square.scale": "function",
        "Acme.Square.unit": "function",
    }  # fmt: skip
    imports = [e.ref.module for e in states["main.rb"].edges
               if e.type is EdgeType.IMPORTS and e.ref is not None]  # fmt: skip
    assert imports == ["ruby_shapes/shapes"]  # require_relative: the file beside


def test_ruby_calls(builder: FileStateBuilder) -> None:
    """Checked by hand against the source: every call of the project's own code (``side`` is
    an ``attr_reader``, ``sum``/``each``/``to_s`` the library's)."""
    assert joined_callers(_states(builder), "ruby") == {
        ("Acme.App.run", "Acme.App.report_all"),  # bare calls of the class's methods
        ("Acme.App.run", "Acme.Base.report"),  # square.report: Square inherits Base's
        ("Acme.App.run", "Acme.App.total"),
        ("Acme.App.run", "Acme.Square"),  # Square.new, looked up from Acme::App outward
        ("Acme.App.run", "Acme.Square.unit"),  # a class method
        ("Acme.App.run", "Acme.Util.Logger"),  # Util::Logger.new
        ("Acme.App.run", "Acme.Util.Logger.child"),  # logger = Util::Logger.new(..)
        ("Acme.Base.initialize", "Acme.Util.Logger"),
        ("Acme.Base.report", "Acme.Describes.describe"),  # a method of the mixed-in module
        ("Acme.Base.report", "Acme.Util.Logger.write"),  # @log = Util::Logger.new(..)
        ("Acme.Square.initialize", "Acme.Base"),  # super in initialize: the base is built
        ("Acme.Square.scale", "Acme.Square"),
        ("Acme.Square.unit", "Acme.Square"),  # new(1.0) in def self.unit
        ("Acme.Util.Logger.child", "Acme.Util.Logger"),
        ("Acme.Util.Logger.write", "Acme.Util.Format.line"),
    }


def test_a_local_is_not_a_call(builder: FileStateBuilder) -> None:
    source = (b"class A\n  def f(items, n = 2)\n    total = 0\n"
              b"    items.each { |x| total += x }\n    total + n + helper\n  end\n"
              b"  def helper; 1; end\n  def total; 0; end\nend\n")  # fmt: skip
    state = build_state(builder, "a.rb", source)
    called = {e.dst.rsplit("::", 1)[-1] for e in state.edges if e.type is EdgeType.CALLS}
    assert "A.helper" in called  # a bare name no local binds
    assert "A.total" not in called  # ``total`` is the local assigned above


def test_broken_ruby_keeps_its_last_good_symbols(builder: FileStateBuilder) -> None:
    good = (SHAPES / "logger.rb").read_bytes()
    before = build_state(builder, "logger.rb", good)
    broken = good.replace(b"@lines << Format.line(@prefix, line)", b"@lines << Format.line(")
    after = build_state(builder, "logger.rb", broken, version=2, previous=before)
    assert after.flags.has_errors
    assert {"Acme.Util.Logger.write", "Acme.Util.Logger.child", "Acme.Util.Format.line"} <= {
        s.qualified_name for s in after.symbols
    }
