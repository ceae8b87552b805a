"""Scala (issue #56), first version: packages (chained clauses too), imports (selectors and
renames), classes, objects (a companion's functions are its class's name's), traits,
methods, vals; calls by declared and built types, ``this``/``super``, the first parent
built with the class; broken code keeping its last good state."""

from __future__ import annotations

from pathlib import Path

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.languages import language_for
from patchstream.schemas.graph import SymbolKind
from patchstream.schemas.state import FileState
from tests.conftest import build_state
from tests.key_joins import joined_callers

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "scala_shapes"


def _states(builder: FileStateBuilder) -> dict[str, FileState]:
    return {p.name: build_state(builder, f"scala_shapes/{p.name}", p.read_bytes())
            for p in sorted(SHAPES.iterdir())}  # fmt: skip


def test_scala_symbols(builder: FileStateBuilder) -> None:
    states = _states(builder)
    assert {s.language for s in states.values()} == {"scala"}
    assert language_for("build.sc", b"") == "scala"
    shapes = states["Shapes.scala"]
    module = next(s for s in shapes.symbols if s.kind is SymbolKind.MODULE)
    assert module.qualified_name == "acme.shapes"  # ``package acme`` then ``package shapes``
    kinds = {s.qualified_name: s.kind.value for s in shapes.symbols
             if s.kind not in (SymbolKind.FILE, SymbolKind.MODULE)}  # fmt: skip
    assert kinds == {
        "Shape": "interface", "Shape.area": "function", "Shape.describe": "function",
        "Base": "class", "Base.log": "variable", "Base.describe": "function",
        "Square": "class", "Square.area": "function", "Square.describe": "function",
        "Square.scale": "function", "Square.unit": "function",
    }  # fmt: skip


def test_scala_calls(builder: FileStateBuilder) -> None:
    """Checked by hand against the source (scalac compiles it): every call of the project's
    own code (``println`` and StringBuilder's are the library's)."""
    assert joined_callers(_states(builder), "scala") == {
        ("Base", "Logger"),  # a val's initializer
        ("Base", "Shape"),  # the first parent, built (a trait's initializer) with the class
        ("Base.describe", "Logger.write"),  # log: built by new Logger
        ("Base.describe", "Shape.describe"),  # super
        ("Logger.child", "Logger"),
        ("Logger.write", "Format.line"),  # an object of the package
        ("Main.main", "Main.report"),
        ("Main.main", "Square"),  # new Square(3.0), through a selector import
        ("Main.main", "Square.describe"),  # big: Square
        ("Main.main", "Square.unit"),  # the companion object's
        ("Main.main", "Logger"),  # what ``import acme.util._`` brings
        ("Main.main", "Logger.child"),
        ("Main.main", "Logger.write"),  # on what child returns
        ("Main.main", "Format.line"),
        ("Main.report", "Shape.area"),  # shape: S, a renamed import
        ("Shape.describe", "Shape.area"),
        ("Square", "Base"),  # extends Base("square")
        ("Square.describe", "Base.describe"),
        ("Square.describe", "Square.area"),  # what scale returns
        ("Square.describe", "Square.scale"),
        ("Square.scale", "Square"),
        ("Square.unit", "Square"),
    }


def test_broken_scala_keeps_its_last_good_symbols(builder: FileStateBuilder) -> None:
    good = (SHAPES / "Logger.scala").read_bytes()
    before = build_state(builder, "Logger.scala", good)
    broken = good.replace(b"lines.append(Format.line(prefix, line))", b"lines.append(Format.line(")
    after = build_state(builder, "Logger.scala", broken, version=2, previous=before)
    assert after.flags.has_errors
    assert {"Logger.write", "Logger.child", "Format.line"} <= {
        s.qualified_name for s in after.symbols
    }


_MIXINS = {
    "acme/ui/Publisher.scala": b"""package acme.ui

trait Reactor {
  val reactions = new Reactions
  def listenTo(p: Publisher): Unit = p.subscribe(this)
}

trait Publisher extends Reactor {
  def subscribe(r: Reactor): Unit = {}
  def publish(e: Any): Unit = {}
}

class Reactions
""",
    "acme/ui/event/Clicked.scala": b"""package acme.ui.event

case class Clicked(x: Int)
""",
    "acme/ui/Button.scala": b"""package acme.ui

import event._

object Cache {
  def wrapper[C](c: Int): C = ???
}

abstract class Peer

class Button extends Peer with Publisher with Serializable {
  lazy val peer = new Peer with Reactor
  def click(): Unit = publish(new Clicked(1))
  def find(c: Int): Button = Cache.wrapper[Button](c)
  def ~(other: Button): Button = other
}
""",
}


def test_scala_mixins_generic_calls_and_relative_imports(builder: FileStateBuilder) -> None:
    """Every parent after ``extends`` counts (a query field matched only the first), ``new A
    with T`` builds A and runs T's initializer, ``f[T](x)`` is a call, ``import event._``
    in ``package acme.ui`` opens ``acme.ui.event``, and a symbolic method is a symbol."""
    states = {path: build_state(builder, path, text) for path, text in _MIXINS.items()}
    button = states["acme/ui/Button.scala"]
    assert "Button.~" in {s.qualified_name for s in button.symbols}
    assert joined_callers(states, "scala") == {
        ("Reactor", "Reactions"),
        ("Reactor.listenTo", "Publisher.subscribe"),
        ("Button", "Peer"),  # the class's base, built with it
        ("Button", "Publisher"),  # the second parent: its initializer runs
        ("Button", "Reactor"),  # lazy val peer = new Peer with Reactor
        ("Button.click", "Publisher.publish"),  # inherited through the second parent
        ("Button.click", "Clicked"),  # acme.ui.event, opened by ``import event._``
        ("Button.find", "Cache.wrapper"),  # Cache.wrapper[Button](c)
    }


def test_a_scala_value_called_is_its_types_apply(builder: FileStateBuilder) -> None:
    """``p(in)`` with ``p: => Parser[T]`` (by name) or ``p: Parser[T]`` is ``Parser.apply``,
    though a ``def Parser`` comes before the class of that name; a function-typed parameter's
    call is no method of the project's."""
    source = b"""package acme

trait Parsers {
  def Parser[T](f: Int => T): Parser[T] = ???
  abstract class Parser[T] {
    def apply(in: Int): T
  }
  def commit[T](p: => Parser[T]) = p(1)
  def guard[T](p: Parser[T], f: Int => T) = { f(2); p(2) }
}
"""
    states = {"Parsers.scala": build_state(builder, "acme/Parsers.scala", source)}
    assert joined_callers(states, "scala") == {
        ("Parsers.commit", "Parsers.Parser.apply"),
        ("Parsers.guard", "Parsers.Parser.apply"),
    }


def test_this_called_in_a_method_is_the_class_apply(builder: FileStateBuilder) -> None:
    """``this(in)`` in a method (a lambda's too) is the class's own ``apply``; in an auxiliary
    constructor (``def this``) it is another constructor."""
    source = b"""package acme

abstract class Parser {
  def apply(in: Int): Int
  def twice(in: Int): Int = this(this(in))
  def map(f: Int => Int): Int = List(1).map { in => f(this(in)) }.head
  def this(x: String) = this()
}
"""
    states = {"Parser.scala": build_state(builder, "acme/Parser.scala", source)}
    called = joined_callers(states, "scala")
    assert {("Parser.twice", "Parser.apply"), ("Parser.map", "Parser.apply")} <= called
    assert ("Parser.this", "Parser.apply") not in called


def test_an_outer_this_and_a_mixin_nested_in_a_base(builder: FileStateBuilder) -> None:
    """Measured on scala-swing (recall 0.759 -> 0.824): ``Component.this.paint(g)`` in a
    trait nested in ``Component`` is Component's ``paint``; ``new JButton with SuperMixin``
    in ``class Button extends Component`` (another file) builds ``Component.SuperMixin``,
    joined through Button's base; a trait of the package keeps its plain edge."""
    states = {
        "Component.scala": build_state(builder, "swing/Component.scala", b"""package swing
trait Publisher { def publish(e: Int): Unit = {} }
class Component extends Publisher {
  trait SuperMixin extends javax.swing.JComponent {
    override def paint(g: Int): Unit = Component.this.paint(g)
  }
  def paint(g: Int): Unit = {}
}
"""),
        "Button.scala": build_state(builder, "swing/Button.scala", b"""package swing
class Button extends Component {
  lazy val peer: javax.swing.JButton = new javax.swing.JButton with SuperMixin
  lazy val other = new javax.swing.JLabel with Publisher
}
"""),
    }  # fmt: skip
    called = joined_callers(states, "scala")
    assert {
        ("Component.SuperMixin.paint", "Component.paint"),
        ("Button", "Component.SuperMixin"),
        ("Button", "Publisher"),
    } <= called
    assert ("Component.SuperMixin.paint", "Component.SuperMixin.paint") not in called
