"""From one file's bytes (and its previous state) to its new :class:`FileState`.

Limits never crash: oversized and binary files keep only a File node, non-UTF-8 text is
decoded with replacement, a parse over budget keeps the previous structure. Broken code keeps
the last good version of every symbol it touches until the file parses cleanly again.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass
from typing import Protocol

import tree_sitter as ts

from patchstream.config.settings import ParsingSettings
from patchstream.parsing.chunking import ChunkOwner, build_chunks
from patchstream.parsing.commit_text import HEAD_PATH, is_commit_path, parse_commit, parse_head
from patchstream.parsing.cpp_language import without_export_macros
from patchstream.parsing.discussion_text import parse_discussion
from patchstream.parsing.extract import Extraction, extract, file_id, module_id
from patchstream.parsing.fact_queries import facts_query
from patchstream.parsing.hashing import hash_bytes, hash_code
from patchstream.parsing.incremental import IncrementalParser, ParseTimeout
from patchstream.parsing.indexable import withheld_hash
from patchstream.parsing.languages import get_query, language_for, language_for_path
from patchstream.parsing.prose import PROSE_LANGUAGE, is_prose, prose_chunks
from patchstream.parsing.rust_language import with_open_macros
from patchstream.parsing.tokens import TokenCounter
from patchstream.schemas.chunks import Chunk
from patchstream.schemas.events import EditHint, file_key
from patchstream.schemas.graph import Edge, EdgeType, Symbol, SymbolKind
from patchstream.schemas.state import FileFlags, FileState


class StateBuilder(Protocol):
    """What the parse stage needs: a file's new state, and forgetting a file that is gone."""

    def build(
        self,
        target: FileRef,
        data: bytes,
        previous: FileState | None = None,
        hint: EditHint | None = None,
    ) -> FileState: ...

    def forget(self, key: str) -> None: ...

    def quiet(self) -> bool:
        """The stage has gone quiet: a chance to give memory back (True if it did)."""
        ...


@dataclass(frozen=True)
class FileRef:
    """Which file a state belongs to, and at what version."""

    tenant: str
    repo: str
    ref: str
    path: str
    version: int
    workspace: str | None = None

    @property
    def key(self) -> str:
        return file_key(self.tenant, self.repo, self.ref, self.path, self.workspace)


class FileStateBuilder:
    """Builds file states; holds the parser (and its tree cache) and the token counter."""

    def __init__(self, settings: ParsingSettings | None = None) -> None:
        self.settings = settings or ParsingSettings()
        self.parser = IncrementalParser(
            self.settings.tree_cache_size,
            self.settings.timeout_micros,
            int(self.settings.tree_cache_mb * (1 << 20)),
        )
        self.counter = TokenCounter(self.settings.token_encoding)

    def forget(self, key: str) -> None:
        """The file is gone: its cached tree goes too."""
        self.parser.forget(key)

    def quiet(self) -> bool:
        return False  # in process: the trees it keeps are the files agents are editing

    def build(
        self,
        target: FileRef,
        data: bytes,
        previous: FileState | None = None,
        hint: EditHint | None = None,
    ) -> FileState:
        return settle(self.build_fresh(target, data, hint), previous)

    def build_fresh(self, target: FileRef, data: bytes, hint: EditHint | None = None) -> Fresh:
        """The state of ``data`` alone (the part that parses, run in the jail when sandboxed);
        :func:`settle` then merges what a budget overrun or a syntax error lost from the
        previous state."""
        language = language_for(target.path, data)
        shell = shell_state(target, data)  # every outcome below refines it
        if len(data) > self.settings.max_file_bytes:
            self.parser.forget(target.key)
            return Fresh(shell.model_copy(update={"flags": FileFlags(too_large=True)}))
        if b"\x00" in data:
            self.parser.forget(target.key)
            return Fresh(shell.model_copy(update={"flags": FileFlags(binary=True)}))
        try:
            text = data.decode("utf-8")
            not_utf8 = False
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            not_utf8 = True
        if language is None and is_prose(target.path):
            chunks = prose_chunks(
                target.path, text, shell.symbols[0], self.counter, self.settings.chunk_max_tokens
            )
            info = parse_commit(text) if is_commit_path(target.path) else None
            return Fresh(
                shell.model_copy(
                    update={
                        "language": PROSE_LANGUAGE,
                        "flags": FileFlags(not_utf8=not_utf8),
                        "chunks": tuple(sorted(chunks, key=lambda c: c.id)),
                        "commit_info": info
                        if info is not None and info.sha in target.path
                        else None,  # a page naming another commit than its path says nothing
                        "discussion_info": parse_discussion(target.path, text),
                    }
                )
            )
        if target.path == HEAD_PATH:
            flags = FileFlags(not_utf8=not_utf8)
            return Fresh(
                shell.model_copy(update={"flags": flags, "history_head": parse_head(text)})
            )
        if language is None:  # no grammar: searchable as plain text, and said so
            chunks = prose_chunks(target.path, text, shell.symbols[0], self.counter,
                                  self.settings.chunk_max_tokens, sections=False)  # fmt: skip
            flags = FileFlags(not_utf8=not_utf8, no_grammar=True)
            ordered = tuple(sorted(chunks, key=lambda c: c.id))
            return Fresh(shell.model_copy(update={"flags": flags, "chunks": ordered}))
        source = text.encode("utf-8") if not_utf8 else data
        try:
            parsed = (without_export_macros(source) if language == "cpp"
                      else with_open_macros(source) if language == "rust" else source)  # fmt: skip
            tree = self.parser.parse(target.key, language, parsed, hint)
            if tree.root_node.has_error and error_fanout(tree) > MAX_ERROR_CHILDREN:
                raise ParseTimeout("an error node too wide for the query to stay in budget")
            # Extraction gets a budget of its own, as long as parsing's: a file of pathological
            # shape costs a worker at most twice the budget, then it moves on. CPU time of this
            # thread, not wall time: under load (a cold index on 2 cores) a wall-clock budget
            # flagged ordinary big files at random and dropped their symbols.
            compile_queries(language)  # once a process (the Swift facts take ~1.4 s): not a file's
            deadline = time.thread_time() + self.settings.timeout_micros / 1_000_000
            extraction = extract(tree, source, language, target.repo, target.path, deadline)
        except ParseTimeout:
            flags = FileFlags(parse_timeout=True, not_utf8=not_utf8)
            return Fresh(shell.model_copy(update={"flags": flags}))
        symbols, edges, chunks = self._assemble(
            target, language, text, shell.symbols[0], extraction
        )
        has_errors = tree.root_node.has_error
        state = shell.model_copy(
            update={
                "flags": FileFlags(has_errors=has_errors, not_utf8=not_utf8),
                "symbols": tuple(sorted(symbols, key=lambda s: s.id)),
                "edges": tuple(sorted(edges, key=Edge.sort_key)),
                "chunks": tuple(sorted(chunks, key=lambda c: c.id)),
            }
        )
        return Fresh(state, tuple(_error_lines(tree)) if has_errors else ())

    def _assemble(
        self, target: FileRef, language: str, text: str, file_node: Symbol, extraction: Extraction
    ) -> tuple[list[Symbol], list[Edge], list[Chunk]]:
        lines = text.split("\n")
        module_node = Symbol(
            id=module_id(target.repo, target.path),
            kind=SymbolKind.MODULE,
            name=extraction.module_name.replace("::", ".").rsplit(".", 1)[-1]
            or posixpath.basename(target.path),
            qualified_name=extraction.module_name,
            path=target.path,
            language=language,
            start_line=1,
            end_line=max(1, len(lines)),
            content_hash=hash_code(text),
        )
        symbols = [file_node, module_node, *(item.symbol for item in extraction.symbols)]
        edges = [
            Edge(type=EdgeType.DEFINES, src=file_node.id, dst=module_node.id),
            *extraction.edges,
        ]
        kinds = {item.symbol.id: item.symbol.kind for item in extraction.symbols}
        owners = [
            ChunkOwner(
                item.symbol.id,
                item.symbol.kind,
                item.symbol.start_line,
                item.symbol.end_line,
                item.boundaries,
            )
            for item in extraction.symbols
            if _owns_chunk(item.symbol, kinds)
        ]
        module_owner = ChunkOwner(
            module_node.id,
            SymbolKind.MODULE,
            1,
            module_node.end_line,
            extraction.module_boundaries,
        )
        chunks = build_chunks(
            target.path,
            lines,
            owners,
            module_owner,
            self.counter,
            self.settings.chunk_max_tokens,
        )
        return symbols, edges, chunks


@dataclass(frozen=True)
class Fresh:
    """A file's state from its bytes alone, with the lines its syntax errors span."""

    state: FileState
    error_lines: tuple[tuple[int, int], ...] = ()


def settle(fresh: Fresh, previous: FileState | None) -> FileState:
    """Over budget, or jailed and failed: the last structure stays until a version parses.
    Syntax errors: the symbols they touch keep their last good version."""
    state = fresh.state
    if previous is None:
        return state
    if state.flags.parse_timeout or state.flags.parse_failed:
        kept = {"symbols": previous.symbols, "edges": previous.edges, "chunks": previous.chunks}
        return state.model_copy(update=kept)
    if not state.flags.has_errors:
        return state
    symbols, edges, chunks = _keep_last_good(
        list(state.symbols), list(state.edges), list(state.chunks), previous,
        list(fresh.error_lines),
    )  # fmt: skip
    return state.model_copy(
        update={
            "symbols": tuple(sorted(symbols, key=lambda s: s.id)),
            "edges": tuple(sorted(edges, key=Edge.sort_key)),
            "chunks": tuple(sorted(chunks, key=lambda c: c.id)),
        }
    )


def shell_state(target: FileRef, data: bytes, flags: FileFlags | None = None) -> FileState:
    """The File-node-only state of ``data``: what a file keeps when nothing else can be said."""
    language = language_for(target.path, data)
    return FileState(
        tenant=target.tenant,
        repo=target.repo,
        ref=target.ref,
        workspace=target.workspace,
        path=target.path,
        version=target.version,
        language=language,
        content_hash=hash_bytes(data),
        size_bytes=len(data),
        symbols=(_file_symbol(target, language, data),),
        flags=flags or FileFlags(),
    )


def withheld_state(target: FileRef, reason: str, size: int) -> FileState:
    """A file whose content the index does not hold (``indexable.WITHHELD``): its name, its
    size, the reason as its flag; the same state whichever producer saw the content."""
    language = language_for_path(target.path)
    digest = withheld_hash(reason, size)
    symbol = Symbol(id=file_id(target.repo, target.path), kind=SymbolKind.FILE,
                    name=posixpath.basename(target.path), qualified_name=target.path,
                    path=target.path, language=language, start_line=1, end_line=1,
                    content_hash=digest)  # fmt: skip
    return FileState(tenant=target.tenant, repo=target.repo, ref=target.ref,
                     workspace=target.workspace, path=target.path, version=target.version,
                     language=language, content_hash=digest, size_bytes=size, symbols=(symbol,),
                     flags=FileFlags.model_validate({reason: True}))  # fmt: skip


def _owns_chunk(symbol: Symbol, kinds: dict[str, SymbolKind]) -> bool:
    """Classes, interfaces and functions not nested in another function own a chunk."""
    if symbol.kind in (SymbolKind.CLASS, SymbolKind.INTERFACE):
        return True
    if symbol.kind is SymbolKind.FUNCTION:
        return kinds.get(symbol.parent_id or "") is not SymbolKind.FUNCTION
    return False


def _file_symbol(target: FileRef, language: str | None, data: bytes) -> Symbol:
    return Symbol(
        id=file_id(target.repo, target.path),
        kind=SymbolKind.FILE,
        name=posixpath.basename(target.path),
        qualified_name=target.path,
        path=target.path,
        language=language,
        start_line=1,
        end_line=max(1, data.count(b"\n") + 1),
        content_hash=hash_bytes(data),
    )


# tree-sitter's query over one ERROR node is quadratic in its children for some shapes (a
# file of 200,000 unclosed parentheses: one ERROR node, 15.5 CPU-s; 50,000: 0.96 s; 20,000:
# 0.16 s) and cannot be cancelled (a progress callback on QueryCursor.matches crashes 0.26).
# Real broken files stay far below: twemoji_db.py (725 KB) with an unclosed paren at the top
# makes one of 11,528 children, queried in 0.02 s.
MAX_ERROR_CHILDREN = 40_000


def error_fanout(tree: ts.Tree) -> int:
    """The most children any ERROR node has (walking only into subtrees with errors)."""
    widest = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error:
            widest = max(widest, node.child_count)
            continue
        stack.extend(child for child in node.children if child.has_error)
    return widest


def _error_lines(tree: ts.Tree) -> list[tuple[int, int]]:
    """1-based line ranges of ERROR and MISSING nodes, found without recursion."""
    found: list[tuple[int, int]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found.append((node.start_point.row + 1, node.end_point.row + 1))
            continue
        stack.extend(child for child in node.children if child.has_error or child.is_missing)
    return found


def _keep_last_good(
    symbols: list[Symbol],
    edges: list[Edge],
    chunks: list[Chunk],
    previous: FileState,
    errors: list[tuple[int, int]],
) -> tuple[list[Symbol], list[Edge], list[Chunk]]:
    """Symbols hit by a syntax error, or gone because of one, keep their previous version."""
    current = {s.id: s for s in symbols}
    prior = {s.id: s for s in previous.symbols}
    affected: set[str] = set()
    scoped = [s for s in symbols if s.kind not in (SymbolKind.FILE, SymbolKind.MODULE)]
    for first, last in errors:
        containing = [s for s in scoped if s.start_line <= first and last <= s.end_line]
        if containing:
            innermost = min(containing, key=lambda s: s.end_line - s.start_line)
            affected.add(innermost.id)
    restore = {sid for sid in affected if sid in prior}
    restore |= {sid for sid in prior if sid not in current}
    merged = {sid: s for sid, s in current.items() if sid not in restore}
    merged.update({sid: prior[sid] for sid in restore})
    kept_edges = {e for e in edges if e.src not in restore}
    kept_edges |= {
        e
        for e in previous.edges
        if e.src in restore or (e.type is EdgeType.DEFINES and e.dst in restore)
    }
    kept_edges = {
        e for e in kept_edges if e.src in merged and (e.ref is not None or e.dst in merged)
    }
    # A previous state read back from the graph has no chunks: keep the new ones then.
    owners_with_chunks = {c.symbol_id for c in previous.chunks}
    kept_chunks = {c.id: c for c in chunks if c.symbol_id not in (restore & owners_with_chunks)}
    kept_chunks.update({c.id: c for c in previous.chunks if c.symbol_id in restore})
    return list(merged.values()), list(kept_edges), list(kept_chunks.values())


def compile_queries(language: str) -> None:
    """Compile (once; cached) the queries extraction runs for ``language``, before a file's
    budget starts: the first Swift file of a process was flagged parse_timeout when the
    compile (1.1-1.4 s) was counted in its 2 s."""
    get_query(language)
    facts_query(language)
