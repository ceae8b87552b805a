from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from patchstream.config.settings import ParsingSettings
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.hashing import hash_code
from patchstream.schemas.graph import SymbolKind
from tests.conftest import FIXTURES, build_state


def test_one_chunk_per_owner_and_every_line_covered_once(builder: FileStateBuilder) -> None:
    source = (FIXTURES / "python/pkg/shapes.py").read_bytes()
    state = build_state(builder, "pkg/shapes.py", source)
    owners = {c.symbol_id for c in state.chunks}
    assert "r::pkg/shapes.py::Shape.area" in owners
    assert "r::pkg/shapes.py::Shape" in owners  # class header, docstring and fields
    assert "r::pkg/shapes.py::<module>" in owners  # imports and module variables
    assert "r::pkg/shapes.py::UNIT" not in owners  # variables live in their scope's chunk
    covered: list[int] = []
    for chunk in state.chunks:
        assert chunk.content_hash == hash_code(chunk.text)
        covered.extend(range(chunk.start_line, chunk.end_line + 1))
    # A class chunk spans its methods' lines but does not contain their text.
    shape = next(c for c in state.chunks if c.symbol_id.endswith("::Shape"))
    assert "def area" not in shape.text and "sides = 0" in shape.text
    non_blank = [n for n, line in enumerate(source.decode().split("\n"), 1) if line.strip()]
    texts = "\n".join(c.text for c in state.chunks)
    for n in non_blank:
        assert source.decode().split("\n")[n - 1] in texts


def test_big_symbols_split_on_statement_boundaries_under_the_cap() -> None:
    builder = FileStateBuilder(ParsingSettings(chunk_max_tokens=64))
    body = "\n".join(f"    value_{i} = compute_something(value_{i - 1}, {i})" for i in range(1, 60))
    source = f"def big(value_0):\n{body}\n    return value_59\n".encode()
    state = build_state(builder, "big.py", source)
    parts = sorted(
        (c for c in state.chunks if c.symbol_id == "r::big.py::big"), key=lambda c: c.start_line
    )
    assert len(parts) > 3
    assert all(c.tokens <= 64 for c in parts)
    assert [c.id for c in parts] == [f"r::big.py::big#{i}" for i in range(len(parts))]
    lines = [line for c in parts for line in c.text.split("\n")]
    assert lines == source.decode().rstrip("\n").split("\n")


def test_a_single_huge_line_is_cut_by_tokens() -> None:
    builder = FileStateBuilder(ParsingSettings(chunk_max_tokens=32))
    source = ("x = [" + ", ".join(str(i) for i in range(400)) + "]\n").encode()
    state = build_state(builder, "wide.py", source)
    assert len(state.chunks) > 5
    assert all(c.tokens <= 33 for c in state.chunks)


def test_moved_code_keeps_its_chunk_hash(builder: FileStateBuilder) -> None:
    method = "    def area(self):\n        return 3.14 * self.r * self.r\n"
    first = build_state(builder, "a.py", f"class A:\n{method}".encode())
    moved = build_state(
        builder, "b.py", f"import math\n\n\nclass B:\n    x = 1\n\n{method}".encode()
    )
    hash_a = next(c.content_hash for c in first.chunks if c.symbol_id.endswith("A.area"))
    hash_b = next(c.content_hash for c in moved.chunks if c.symbol_id.endswith("B.area"))
    assert hash_a == hash_b


def test_nested_functions_stay_in_their_outer_chunk(builder: FileStateBuilder) -> None:
    source = b"def outer():\n    def inner():\n        return 1\n    return inner()\n"
    state = build_state(builder, "n.py", source)
    kinds = {s.qualified_name: s.kind for s in state.symbols}
    assert kinds["outer.inner"] is SymbolKind.FUNCTION
    assert [c.symbol_id for c in state.chunks] == ["r::n.py::outer"]


def test_markdown_is_prose_cut_by_section(builder: FileStateBuilder) -> None:
    doc = (
        "# Title\n\nIntro.\n\n## Install\n\n```bash\n# not a heading\npip install x\n```\n\n"
        "## Use\n\nCall it.\n"
    )
    state = build_state(builder, "docs/guide.md", doc.encode())
    assert state.language == "markdown"
    starts = sorted(c.start_line for c in state.chunks)
    assert starts == [1, 5, 12]  # the fenced '# not a heading' does not open a section
    assert all(c.symbol_id == "r::docs/guide.md" for c in state.chunks)


@given(st.lists(st.text(alphabet=" \t\fab", max_size=8), max_size=8))
def test_normalized_code_equals_the_textwrap_reference(lines: list[str]) -> None:
    import textwrap

    from patchstream.parsing.hashing import normalize_code

    text = "\n".join(lines)
    stripped = [line.rstrip() for line in text.split("\n")]
    assert normalize_code(text) == textwrap.dedent("\n".join(stripped)).strip("\n")
