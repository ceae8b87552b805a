"""Parsing with a time budget, reusing the previous tree of a file when it is cached.

tree-sitter reparses only what an edit touched when given the old tree after ``Tree.edit``.
The edit is derived from the previous and new bytes (common prefix and suffix), so callers
need not send one; an :class:`~patchstream.schemas.events.EditHint` is used when it agrees.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

import tree_sitter as ts

from patchstream.parsing.languages import get_language
from patchstream.schemas.events import EditHint

_READ_SIZE = 1 << 16


class ParseTimeout(Exception):  # noqa: N818 - internal signal, never escapes this package
    """The parse budget ran out."""


@dataclass(frozen=True)
class ByteEdit:
    start_byte: int
    old_end_byte: int
    new_end_byte: int


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix, by bisection over C-speed slice compares."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    lo, hi = 0, min(limit, len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def diff_edit(old: bytes, new: bytes, hint: EditHint | None = None) -> ByteEdit:
    """The single byte range that turns ``old`` into ``new``."""
    if hint is not None and _hint_matches(old, new, hint):
        return ByteEdit(hint.start_byte, hint.old_end_byte, hint.new_end_byte)
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
    return ByteEdit(prefix, len(old) - suffix, len(new) - suffix)


def _hint_matches(old: bytes, new: bytes, hint: EditHint) -> bool:
    tail_old = len(old) - hint.old_end_byte
    tail_new = len(new) - hint.new_end_byte
    return (
        hint.start_byte <= hint.old_end_byte <= len(old)
        and hint.start_byte <= hint.new_end_byte <= len(new)
        and tail_old == tail_new
        and old[: hint.start_byte] == new[: hint.start_byte]
        and old[hint.old_end_byte :] == new[hint.new_end_byte :]
    )


def _point(data: bytes, offset: int) -> tuple[int, int]:
    row = data.count(b"\n", 0, offset)
    line_start = data.rfind(b"\n", 0, offset) + 1
    return row, offset - line_start


@dataclass
class _Cached:
    language: str
    data: bytes
    tree: ts.Tree


class IncrementalParser:
    """Parses files, keeping the trees of the last ``cache_size`` files, and of at most
    ``cache_bytes`` of their source, for incremental reparsing. Bytes bound it, not only
    entries: a tree costs 25-30x its source, and one huge file costs as much as hundreds
    of ordinary ones."""

    def __init__(
        self,
        cache_size: int = 512,
        timeout_micros: int = 2_000_000,
        cache_bytes: int = 1 << 20,
    ) -> None:
        self.cache_size = cache_size
        self.cache_bytes = cache_bytes
        self.timeout_micros = timeout_micros
        self._parsers: dict[str, ts.Parser] = {}
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self.cached_bytes = 0
        self.reused = 0
        self.full = 0

    def _parser(self, language: str) -> ts.Parser:
        parser = self._parsers.get(language)
        if parser is None:
            parser = self._parsers[language] = ts.Parser(get_language(language))
        return parser

    def forget(self, key: str) -> None:
        gone = self._cache.pop(key, None)
        if gone is not None:
            self.cached_bytes -= len(gone.data)

    def parse(self, key: str, language: str, data: bytes, hint: EditHint | None = None) -> ts.Tree:
        """Parse ``data``; raises :class:`ParseTimeout` when the budget is exceeded."""
        old_tree: ts.Tree | None = None
        cached = self._cache.get(key)
        if cached is not None and cached.language == language:
            if cached.data == data:
                self._cache.move_to_end(key)
                return cached.tree
            edit = diff_edit(cached.data, data, hint)
            old_tree = cached.tree
            old_tree.edit(
                start_byte=edit.start_byte,
                old_end_byte=edit.old_end_byte,
                new_end_byte=edit.new_end_byte,
                start_point=_point(cached.data, edit.start_byte),
                old_end_point=_point(cached.data, edit.old_end_byte),
                new_end_point=_point(data, edit.new_end_byte),
            )
        try:
            tree = self._parse(language, data, old_tree)
        except ParseTimeout:
            self.forget(key)  # the cached tree was edited in place and no longer matches
            raise
        if old_tree is None:
            self.full += 1
        else:
            self.reused += 1
        self._keep(key, _Cached(language, data, tree))
        return tree

    def _keep(self, key: str, entry: _Cached) -> None:
        self.forget(key)
        if self.cache_size <= 0 or len(entry.data) > self.cache_bytes:
            return
        self._cache[key] = entry
        self.cached_bytes += len(entry.data)
        while len(self._cache) > self.cache_size or self.cached_bytes > self.cache_bytes:
            _, oldest = self._cache.popitem(last=False)
            self.cached_bytes -= len(oldest.data)

    def _parse(self, language: str, data: bytes, old_tree: ts.Tree | None) -> ts.Tree:
        # The budget is this thread's CPU time: on a busy machine a file's wall time grows
        # with the load, and a wall-clock budget dropped big ordinary files at random.
        deadline = time.thread_time() + self.timeout_micros / 1_000_000

        def read(offset: int, _point: object) -> bytes:
            return data[offset : offset + _READ_SIZE]

        calls = 0

        # tree-sitter calls this every hundred or so parse steps, and a thread's CPU clock
        # is a system call (no vDSO): looking at every call took 4.6% of building a state,
        # half as much as the parse itself. Every 16th call is still every few microseconds.
        def past_deadline(*_state: object) -> bool:
            nonlocal calls
            calls += 1
            return not calls & 15 and time.thread_time() > deadline

        try:
            if old_tree is None:
                return self._parser(language).parse(read, progress_callback=past_deadline)
            return self._parser(language).parse(
                read, old_tree=old_tree, progress_callback=past_deadline
            )
        except ValueError as exc:  # tree-sitter signals a cancelled parse this way
            self._parser(language).reset()
            raise ParseTimeout(f"parse exceeded {self.timeout_micros} µs") from exc
