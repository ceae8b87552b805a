"""The tree cache is bounded by the bytes of its sources, not only by its entries."""

from __future__ import annotations

from patchstream.parsing.incremental import IncrementalParser


def _source(n: int) -> bytes:
    return b"".join(b"def f%d(x):\n    return x + %d\n" % (i, i) for i in range(n))


def test_the_oldest_trees_go_when_the_source_bytes_are_over_the_bound() -> None:
    small = _source(50)
    parser = IncrementalParser(cache_size=100, cache_bytes=3 * len(small) + 10)
    for name in ("a.py", "b.py", "c.py", "d.py"):
        parser.parse(name, "python", small)
    assert list(parser._cache) == ["b.py", "c.py", "d.py"]
    assert parser.cached_bytes == 3 * len(small)
    # A file over the whole bound is parsed, never kept, and pushes nothing out.
    huge = _source(400)
    assert parser.parse("huge.py", "python", huge).root_node.child_count == 400
    assert "huge.py" not in parser._cache and len(parser._cache) == 3
    # An edit replaces its file's entry: the bytes are counted once.
    edited = small.replace(b"return x + 7", b"return x + 70")
    parser.parse("c.py", "python", edited)
    assert parser.reused == 1
    assert parser.cached_bytes == 2 * len(small) + len(edited)
    parser.forget("c.py")
    assert parser.cached_bytes == 2 * len(small)


def test_the_entry_bound_still_holds() -> None:
    parser = IncrementalParser(cache_size=2, cache_bytes=1 << 30)
    for name in ("a.py", "b.py", "c.py"):
        parser.parse(name, "python", _source(5))
    assert list(parser._cache) == ["b.py", "c.py"]
    assert parser.cached_bytes == 2 * len(_source(5))
