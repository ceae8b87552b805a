"""PHP (issue #56), first version: namespaces and ``use`` (grouped, aliased, functions),
classes, interfaces, traits, enums, methods, properties; calls by declared, docblock and
built types, ``$this``/``self``/``static``/``parent``; broken code keeping its last good
state; hostile docblocks bounded."""

from __future__ import annotations

import time
from pathlib import Path

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.languages import language_for
from patchstream.parsing.php_language import doc_tags, doc_type
from patchstream.parsing.source import php_name
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.schemas.state import FileState
from tests.conftest import build_state
from tests.key_joins import joined_callers

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "php_shapes"


def _states(builder: FileStateBuilder) -> dict[str, FileState]:
    return {p.name: build_state(builder, f"php_shapes/{p.name}", p.read_bytes())
            for p in sorted(SHAPES.iterdir())}  # fmt: skip


def test_php_names_read_as_dotted() -> None:
    assert php_name("$this->log") == "this.log"
    assert php_name("\\Acme\\Util\\f") == "global.Acme.Util.f"
    assert php_name("Node\\Expr") == "Node.Expr"
    assert php_name("parent", relative_scope=True) == "super"
    assert php_name("parent") == "parent"  # ``$node->parent()`` is a method of that name
    assert php_name("$x?->y") == "x.y"


def test_php_symbols(builder: FileStateBuilder) -> None:
    states = _states(builder)
    assert {s.language for s in states.values()} == {"php"}
    assert language_for("index.php", b"") == "php"
    shapes = states["Shapes.php"]
    module = next(s for s in shapes.symbols if s.kind is SymbolKind.MODULE)
    assert module.qualified_name == "Acme.Shapes"  # the namespace
    kinds = {s.qualified_name: s.kind.value for s in shapes.symbols
             if s.kind not in (SymbolKind.FILE, SymbolKind.MODULE)}  # fmt: skip
    assert kinds == {
        "Shape": "interface", "Shape.area": "function",
        "Describes": "class", "Describes.describe": "function",
        "Base": "class", "Base.log": "variable", "Base.__construct": "function",
        "Base.report": "function",
        "Square": "class", "Square.__construct": "function", "Square.area": "function",
        "Square.scale": "function", "Square.unit": "function",
    }  # fmt: skip
    imports = {(e.ref.module, e.ref.name) for e in states["main.php"].edges
               if e.type is EdgeType.IMPORTS and e.ref is not None}  # fmt: skip
    assert imports == {("Acme.Shapes", "Square"), ("Acme.Shapes", "Shape"),
                       ("Acme.Util", "Logger"), ("Acme.Util", "format_line")}  # fmt: skip


def test_php_calls(builder: FileStateBuilder) -> None:
    """Checked by hand against the source: every call of the project's own code."""
    assert joined_callers(_states(builder), "php") == {
        ("Base.__construct", "Logger"),  # new Logger($name), a use'd class
        ("Base.report", "Describes.describe"),  # a method of the trait the class uses
        ("Base.report", "Logger.write"),  # $this->log: a typed property
        ("Logger.child", "Logger"),
        ("Logger.write", "format_line"),  # a function of the namespace
        ("Square.__construct", "Base.__construct"),  # parent::__construct
        ("Square.scale", "Square"),  # new static
        ("Square.unit", "Square"),  # new self
        ("main", "Logger"),  # from a grouped use
        ("main", "Logger.child"),  # $logger = new Logger(..)
        ("main", "Square.scale"),  # $big: a @param docblock's type
        ("main", "Square.unit"),  # Square::unit()
        ("main", "format_line"),  # use function
        ("main", "total"),  # a function of the file's namespace, and \Acme\App\total
    }


def test_docblock_types() -> None:
    assert doc_type("Node|null") == "Node"
    assert doc_type("?\\PhpParser\\Node") == "global.PhpParser.Node"
    assert doc_type("Node|Name") is None  # two classes: no one type
    assert doc_type("string") is None
    assert doc_tags("/** @param Node $n\n * @return Name */") == [
        ("param", "n", "Node"), ("return", None, "Name")]  # fmt: skip
    assert doc_tags("// @param Node $n") == []  # a docblock only


def test_hostile_docblock_is_bounded(builder: FileStateBuilder) -> None:
    """A docblock of 200,000 tags is read up to its bound, quickly."""
    hostile = b"<?php\n/** " + b"@param " * 200_000 + b"*/\nfunction f($x) { $x->g(); }\n"
    started = time.perf_counter()
    state = build_state(builder, "hostile.php", hostile)
    assert time.perf_counter() - started < 20
    assert any(s.qualified_name == "f" for s in state.symbols)


def test_broken_php_keeps_its_last_good_symbols(builder: FileStateBuilder) -> None:
    good = (SHAPES / "Logger.php").read_bytes()
    before = build_state(builder, "Logger.php", good)
    broken = good.replace(b"format_line($this->prefix, $line);", b"format_line($this->")
    after = build_state(builder, "Logger.php", broken, version=2, previous=before)
    assert after.flags.has_errors
    assert {"Logger.write", "Logger.child", "format_line"} <= {
        s.qualified_name for s in after.symbols
    }
