"""The query service's logic over the two stores; the HTTP layer only adds auth and JSON."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from patchstream.agent.memory_service import MemoryService
from patchstream.agent.service import AgentStateService, NotFound
from patchstream.config.settings import Settings
from patchstream.errors import StoreError
from patchstream.parsing.tokens import TokenCounter
from patchstream.query.context import Block, Candidate, assemble
from patchstream.query.file_map import (
    entry_hits,
    file_map_candidates,
    history_candidate,
    hit_candidate,
    named_members,
    remaining_candidates,
)
from patchstream.query.freshness import FreshnessReader
from patchstream.query.question import MAX_DEFINERS, NamedFiles, named_files, named_in
from patchstream.query.through_macros import through_macros
from patchstream.query.working_state import memory_candidate, working_state_candidates
from patchstream.schemas.discussions import is_discussion_path
from patchstream.schemas.graph import CallResolution
from patchstream.schemas.read_tokens import PendingWrite
from patchstream.stores.graph.base import GraphStore, Neighbor, StoredSymbol
from patchstream.stores.overlays import WORKSPACE_MARK, split_workspace
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.milvus_rows import SearchHit
from patchstream.stores.vector.search_mirror import SearchMirror

DEFAULT_BRANCHES = ("main", "master", "trunk", "develop")
_DEFAULT_REF_TTL_S = 5.0  # a repository's branches change rarely; a search asks each time
# Candidates whose trust is set where they are made, not from the file's last writer.
_TRUSTED_AT_SOURCE = ("working-state", "memory", "history")


@dataclass
class ContextResult:
    blocks: list[Block]
    tokens_used: int
    budget_tokens: int
    entry_points: list[str]


class QueryService:
    def __init__(
        self,
        settings: Settings,
        graph: GraphStore,
        vectors: MilvusVectorStore,
        agent: AgentStateService | None = None,
        memory: MemoryService | None = None,
    ) -> None:
        self.settings = settings
        self.graph = graph
        self.vectors = vectors
        self.agent = agent  # runs and sessions: the working-state tier of context
        self.memory = memory  # long-term memory: a small tier below the working state
        self.mirror: SearchMirror | None = None  # searches in process, Milvus by key
        self.counter = TokenCounter(settings.parsing.token_encoding)
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="graph-walk")
        self.fresh = FreshnessReader(settings, graph, vectors, lambda: self.mirror)
        self._defaults: dict[tuple[str, str], tuple[float, str | None]] = {}

    def search(
        self,
        tenant: str,
        query: str,
        limit: int = 10,
        repo: str | None = None,
        ref: str | None = None,
        path_prefix: str | None = None,
        kind: str | None = None,
    ) -> list[SearchHit]:
        if repo and ref is None:
            ref = self.default_ref(tenant, repo)
        # An overlay (``main~agent-42``, or a branch declared over a base) reads as a view.
        view = self.graph.view(tenant, repo, ref) if repo and ref else None
        if self.mirror is not None:
            named = self._named_files(tenant, query, repo, ref)
            hits = self.mirror.search(tenant, query, limit=limit, repo=repo, ref=ref,
                                      path_prefix=path_prefix, kind=kind, view=view,
                                      named_files=named)  # fmt: skip
            if hits is not None:
                return hits
        return self.vectors.search(tenant, query, limit=limit, repo=repo, ref=ref,
                                   path_prefix=path_prefix, kind=kind, view=view)  # fmt: skip

    def _named_files(
        self, tenant: str, query: str, repo: str | None, ref: str | None
    ) -> Callable[[Mapping[str, Sequence[str]]], NamedFiles] | None:
        """The files defining what the question names in code, found in the graph (a
        traceback's frames, paths, identifiers): a ranked list search fuses."""
        named = named_in(query)
        if not named:
            return None

        def definers(names: Sequence[str]) -> dict[str, set[str]]:
            return self.graph.definers(tenant, names, repo, ref, at_most=MAX_DEFINERS)

        def pointed(by_name: Mapping[str, Sequence[str]]) -> NamedFiles:
            return named_files(named, definers, by_name)

        return pointed

    def default_ref(self, tenant: str, repo: str) -> str | None:
        """The branch a read of ``repo`` without a ref means: the first of ``main``,
        ``master``, ``trunk``, ``develop`` it has, else its only branch; None (every branch)
        when it has several and none of those. Overlays (other branches declared over a base,
        agents' workspaces) are never a default."""
        now = time.monotonic()
        cached = self._defaults.get((tenant, repo))
        if cached is not None and now - cached[0] < _DEFAULT_REF_TTL_S:
            return cached[1]
        overlays = {o.ref for o in self.graph.overlays(tenant, repo)}
        branches = {r for r in self.graph.refs(tenant, repo)
                    if r not in overlays and WORKSPACE_MARK not in r}  # fmt: skip
        named = next((b for b in DEFAULT_BRANCHES if b in branches), None)
        if named is None and len(branches) == 1:
            named = next(iter(branches))
        if len(self._defaults) > 4096:
            self._defaults.clear()
        self._defaults[(tenant, repo)] = (now, named)
        return named

    def unknown(self, tenant: str, repo: str, ref: str | None) -> str | None:
        """Why a read of ``repo`` (at ``ref``) can find nothing, when the repository or the
        ref does not exist for this tenant, naming what does; None when both exist."""
        known = self.graph.known_refs(tenant, repo)
        if not known:
            held = self.graph.repos(tenant)
            listed = ", ".join(held[:20]) + (" ..." if len(held) > 20 else "")
            return f"no repository {repo!r} is indexed (indexed: {listed or 'none'})"
        if ref is None or ref in known:
            return None
        base, workspace = split_workspace(ref)
        if workspace is not None and base in known:  # never written to, or dropped
            spaces = sorted(k for k in known if k.startswith(f"{base}~"))
            return (f"{repo!r} has no workspace {workspace!r} over {base!r} (workspaces: "
                    f"{', '.join(spaces[:20]) or 'none'}); a workspace is made by its first "
                    "write")  # fmt: skip
        return f"{repo!r} has no ref {ref!r} (refs: {', '.join(sorted(known)[:20])})"

    def symbols_named(
        self, tenant: str, name: str, repo: str | None, ref: str | None
    ) -> list[StoredSymbol]:
        """Symbols called ``name``, in the ref's view: a workspace or branch overlay's own
        names too. A ref without a repository is looked up in every repository's view."""
        if repo is not None or ref is None:
            return self.graph.symbols_by_name(tenant, name, repo, ref)
        return [s for held in self.graph.repos(tenant)
                for s in self.graph.symbols_by_name(tenant, name, held, ref)]  # fmt: skip

    def symbol(self, tenant: str, symbol_id: str, ref: str = "main") -> StoredSymbol | None:
        return self.graph.symbol(tenant, symbol_id, ref)

    def walk(
        self, tenant: str, kind: str, symbol_id: str, depth: int, ref: str,
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> list[Neighbor]:  # fmt: skip
        walks = {"callers": self.graph.callers, "callees": self.graph.callees,
                 "impact": self.graph.impact}  # fmt: skip
        found = walks[kind](tenant, symbol_id, depth, ref, weakest)
        if kind == "impact":  # transitive already: a macro is one more caller on the way
            return found
        return through_macros(found, lambda sid: walks[kind](tenant, sid, 1, ref, weakest))

    def context(
        self,
        tenant: str,
        query: str,
        budget: int,
        repo: str | None = None,
        ref: str | None = "main",
        session: str | None = None,
        run: str | None = None,
    ) -> ContextResult:
        candidates: list[Candidate] = self._working_state(tenant, session, run)
        if session:
            candidates += self._session_candidates(tenant, session, repo)
        candidates += self._memory_candidates(tenant, query, repo)
        wanted = self.settings.query
        entry_points = max(wanted.entry_points, budget // wanted.tokens_per_entry)
        hits = self.search(tenant, query, limit=max(entry_points * 2, wanted.map_hits),
                           repo=repo, ref=ref)  # fmt: skip
        entries = entry_hits(hits, entry_points)
        members = self._entry_members(tenant, query, entries, hits)
        for hit in entries:  # a class's entry brings the methods the question names
            candidates.append(hit_candidate("entry-code", hit))
            candidates += [hit_candidate("entry-code", m) for m in members.get(hit.chunk_id, [])]
        # Who changed the entry files last, and why: read beside the walks, listed after the
        # entry code.
        history_at = len(candidates)
        history = self._pool.submit(self._history_candidates, tenant, entries)
        # Then the next best files, a short block each: breadth before depth.
        candidates += file_map_candidates(
            hits, wanted.map_files, skip={(h.repo, h.ref, h.path) for h in entries}
        )
        # Who last wrote the files found so far is read beside the walks, not after them.
        remaining = remaining_candidates(hits, entries)
        writers = self._pool.submit(self._writers, tenant, _untrusted_files(candidates + remaining))
        # Callers and callees of every entry point: one multi-start walk per direction and
        # ref, the two side by side (each symbol's answer is still its own walk's).
        jobs: dict[tuple[str, str], list[str]] = {}
        for hit in entries:
            for direction in ("callers", "callees"):
                jobs.setdefault((direction, ref or hit.ref), []).append(hit.symbol_id)
        results = self._pool.map(
            lambda job: self.graph.walks(tenant, job[0][0], job[1], 2, job[0][1],
                                         limit=wanted.context_walk_rows),
            jobs.items(),
        )  # fmt: skip
        reached = dict(zip(jobs, results, strict=True))
        for hit in entries:
            for direction in ("callers", "callees"):
                for neighbor in reached[(direction, ref or hit.ref)].get(hit.symbol_id, []):
                    candidates.append(_signature(f"{direction[:-1]}-signature", neighbor))
        # Then the rest of the search's code, best first, while the budget lasts: an 8k
        # answer holds more relevant code instead of stopping near 4k when the entry points'
        # neighbourhood runs out.
        candidates += remaining
        candidates[history_at:history_at] = history.result()
        # Graph fan-out can bring thousands of signatures; only the first ones could fit anyway.
        candidates = self._with_trust(
            tenant, candidates[: self.settings.query.max_context_candidates], writers.result()
        )
        blocks, used = assemble(candidates, budget, self.counter)
        return ContextResult(blocks, used, budget, [h.symbol_id for h in entries])

    def _entry_members(
        self, tenant: str, query: str, entries: Sequence[SearchHit], hits: Sequence[SearchHit]
    ) -> dict[str, list[SearchHit]]:
        """Each class entry's members that the question names, their first chunk each."""
        found: dict[str, list[SearchHit]] = {}
        for hit in (h for h in entries if h.kind == "class"):
            chunks = self._member_chunks(tenant, hit)
            if chunks is None:  # the class's own code is still the entry
                continue
            first: dict[str, SearchHit] = {}
            for chunk in chunks:  # in file order: a member's first chunk
                first.setdefault(chunk.symbol_id, chunk)
            lines = [(symbol_id, chunk.start_line) for symbol_id, chunk in first.items()]
            ids = named_members(query, hit.symbol_id, lines)
            held = {h.symbol_id: h for h in hits if h.path == hit.path}
            found[hit.chunk_id] = [held.get(i, first[i]) for i in ids]
        return found

    def _member_chunks(self, tenant: str, hit: SearchHit) -> list[SearchHit] | None:
        """The chunks of a class entry's members: from the search copy when it can answer,
        else the graph's symbols of its file and Milvus's chunks of theirs."""
        prefix = f"{hit.symbol_id}."
        if self.mirror is not None:
            held = self.mirror.chunks_under(tenant, hit.path, prefix, hit.ref)
            if held is not None:
                return held
        try:
            symbols = self.graph.file_symbols(tenant, hit.repo, hit.ref, hit.path)
            ids = [s.id for s in symbols if s.id.startswith(prefix)]
            return self.vectors.chunks_for_symbols(tenant, ids, hit.ref) if ids else []
        except StoreError:
            return None

    def _history_candidates(self, tenant: str, entries: Sequence[SearchHit]) -> list[Candidate]:
        """A short block per entry file: its last commits, with the issues they name."""
        wanted = self.settings.query
        files = list(dict.fromkeys((h.repo, h.ref, h.path) for h in entries))
        by_view: dict[tuple[str, str], list[str]] = {}
        for repo, ref, path in files[: wanted.history_files]:
            by_view.setdefault((repo, ref), []).append(path)
        found = []
        for (repo, ref), paths in by_view.items():
            try:
                commits = self.graph.histories(tenant, repo, ref, paths,
                                               limit=wanted.history_commits)  # fmt: skip
            except StoreError:  # history is a help, never a reason to fail a context
                continue
            found += [history_candidate(repo, ref, path, commits[path])
                      for path in paths if commits.get(path)]  # fmt: skip
        return found

    def _working_state(self, tenant: str, session: str | None, run: str | None) -> list[Candidate]:
        """The session's working state and its run's, first of all (an unknown id adds none)."""
        if self.agent is None or not (session or run):
            return []
        found = self.agent.find_session(tenant, session) if session else None
        run_id = run or (found.active_run if found else None)
        active = None
        if run_id:
            try:
                active = self.agent.get_run(tenant, run_id)
            except NotFound:
                active = None
        return working_state_candidates(found, active)

    def _memory_candidates(self, tenant: str, query: str, repo: str | None) -> list[Candidate]:
        if self.memory is None:
            return []
        limit = self.memory.policy.read.context_items
        if limit <= 0:
            return []
        owners = {repo} if repo else None
        return [memory_candidate(r) for r in self.memory.search(tenant, query, None, limit, owners)]

    def _session_candidates(self, tenant: str, session: str, repo: str | None) -> list[Candidate]:
        candidates = []
        for write in self.graph.session_files(tenant, session, repo):
            if write.deleted or not write.changed:
                continue
            for chunk in self.vectors.chunks_for_symbols(tenant, list(write.changed), write.ref):
                candidates.append(hit_candidate("session-change", chunk))
        return candidates

    def _with_trust(
        self, tenant: str, candidates: list[Candidate], known: dict[tuple[str, str, str], str]
    ) -> list[Candidate]:
        """Each candidate's trust from its file's last writer; ``known`` holds writers already
        read, the rest (the walks' signatures) are read here."""
        unread = [f for f in _untrusted_files(candidates) if f not in known]
        sources = {**known, **self._writers(tenant, unread)}
        result = []
        for candidate in candidates:
            if candidate.source in _TRUSTED_AT_SOURCE:
                result.append(candidate)  # its trust is set where it is made
                continue
            source = sources[(candidate.repo, candidate.ref, candidate.path)]
            trust = "agent-written" if source in ("agent", "cli") else "repository"
            if is_discussion_path(candidate.path):  # strangers' words, whoever relayed them
                trust = "discussion"
            result.append(Candidate(**{**candidate.__dict__, "trust": trust}))
        return result

    def _writers(
        self, tenant: str, files: list[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], str]:
        """Each file's last writer; a file no write has fenced was loaded from a snapshot."""
        found = self.graph.file_sources(tenant, files) if files else {}
        return {file: found.get(file, "snapshot") for file in files}

    def freshness(self, tenant: str, repo: str, ref: str = "main") -> dict[str, object]:
        """Per-tier freshness, computed at most once a second per repository."""
        return self.fresh.tiers(tenant, repo, ref)

    def applied(self, tenant: str, write: PendingWrite) -> tuple[bool, bool]:
        """Whether each tier holds ``write`` (or something newer)."""
        graph = self.graph.file_version(tenant, write.repo, write.ref, write.path)
        vector = self.vectors.file_version(tenant, write.repo, write.ref, write.path)
        if self.mirror is not None and vector is not None and vector >= write.version:
            self.mirror.sync(tenant)  # a reader that waited for its write searches it
        return (
            graph is not None and graph.version >= write.version,
            vector is not None and vector >= write.version,
        )


def _untrusted_files(candidates: list[Candidate]) -> list[tuple[str, str, str]]:
    """The files whose last writer sets their candidates' trust."""
    return sorted({(c.repo, c.ref, c.path) for c in candidates
                   if c.source not in _TRUSTED_AT_SOURCE})  # fmt: skip


def _signature(kind: str, neighbor: Neighbor) -> Candidate:
    symbol = neighbor.symbol
    text = symbol.signature or symbol.qualified_name
    if symbol.doc:
        text += f"\n    # {symbol.doc}"
    return Candidate(
        kind=kind,
        repo=symbol.repo,
        ref=symbol.ref,
        path=symbol.path,
        start_line=symbol.start_line,
        end_line=symbol.start_line,
        text=text,
        symbol_id=symbol.id,
        source="signature",
        key=f"sig:{symbol.id}",
    )
