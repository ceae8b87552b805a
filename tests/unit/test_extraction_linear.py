"""Extraction stays linear on pathological nesting: the fast paths equal the reference ones.

Speed itself is measured by ``bench/parse.py --pathological`` (never timed here); these tests
hold the fast algorithms to the slow, obviously right ones they replaced.
"""

from __future__ import annotations

import re

import tree_sitter as ts
from hypothesis import given, settings
from hypothesis import strategies as st

from patchstream.parsing.extract import _Def, _Extractor
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.languages import get_language
from patchstream.parsing.node_text import without_generics

_GENERICS = re.compile(r"<[^<>]*>")


def _reference_without_generics(text: str) -> str:
    while True:
        stripped = _GENERICS.sub("", text)
        if stripped == text:
            return text
        text = stripped


@given(st.text(alphabet="ab<>.-:", max_size=60))
def test_generic_removal_equals_repeated_innermost_removal(text: str) -> None:
    assert without_generics(text) == _reference_without_generics(text)


def _reference_enclosing(extractor: _Extractor, node: ts.Node) -> _Def | None:
    current = node.parent
    while current is not None:
        key = (current.start_byte, current.end_byte, current.type)
        found = extractor.def_by_node.get(key)
        if found is not None and found.kind not in ("variable", "impl"):
            return found
        current = current.parent
    return None


_BLOCKS = st.recursive(
    st.sampled_from(["x = f(1)", "return g(h(2))", "y = A(k())"]),
    lambda inner: st.tuples(st.sampled_from(["def", "class"]), st.lists(inner, min_size=1,
                                                                         max_size=3)),
    max_leaves=12,
)  # fmt: skip


def _render(block: object, depth: int, counter: list[int]) -> list[str]:
    pad = "    " * depth
    if isinstance(block, str):
        return [pad + block]
    keyword, body = block  # type: ignore[misc]
    counter[0] += 1
    head = f"{pad}def f{counter[0]}():" if keyword == "def" else f"{pad}class C{counter[0]}:"
    lines = [head]
    for item in body:
        lines += _render(item, depth + 1, counter)
    return lines


@settings(max_examples=60, deadline=None)
@given(st.lists(_BLOCKS, min_size=1, max_size=4))
def test_enclosing_definition_by_position_equals_the_parent_walk(blocks: list[object]) -> None:
    counter = [0]
    lines: list[str] = []
    for block in blocks:
        lines += _render(block, 0, counter)
    source = ("\n".join(lines) + "\n").encode()
    tree = ts.Parser(get_language("python")).parse(source)
    extractor = _Extractor(tree, source, "python", "r", "m.py")
    extractor.run()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "call":
            assert extractor._enclosing_def(node) is _reference_enclosing(extractor, node)


def test_deeply_nested_calls_and_generics_extract_completely() -> None:
    builder = FileStateBuilder()
    depth = 5000
    code = (
        "def outer():\n    return "
        + "g(" * depth
        + "1"
        + ")" * depth
        + "\n\n\ndef g(x):\n    return x\n"
    )
    ref = FileRef(tenant="t", repo="r", ref="main", path="calls.py", version=1)
    state = builder.build(ref, code.encode())
    assert not state.flags.parse_timeout
    calls = {(e.src, e.dst) for e in state.edges if e.dst is not None}
    assert ("r::calls.py::outer", "r::calls.py::g") in calls
    typed = "let x: " + "Aa<" * 30_000 + "B" + ">" * 30_000 + " = f();\n"  # ~120 KB
    ts_ref = FileRef(tenant="t", repo="r", ref="main", path="gen.ts", version=1)
    assert not builder.build(ts_ref, typed.encode()).flags.parse_timeout
