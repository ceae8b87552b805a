"""Reads of a ref's history: the commits that changed a file or a definition, newest first,
limited to those reachable from the head of the view's top layer that has one.

An overlay at an older commit (a branch indexed over main, an evaluation at an issue's base
commit) holds its own ``_commits/HEAD`` and inherits main's commit files; reachability from
its head keeps main's later history out of it. The commit graph of a view (sha -> parents)
is read once per head and commit count, and kept; a push that moves the head forward reads
only its new commits on top of the kept walk.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from patchstream.stores.graph.base import CommitHit
from patchstream.stores.graph.discussion_reads import DiscussionReads
from patchstream.stores.graph.history_statements import (
    READ_COMMIT_PARENTS,
    READ_COMMITS,
    READ_HEAD_STAMPS,
    READ_HEADS,
    READ_PARENTS,
    READ_PATH_CHANGES,
    READ_PATH_SHAS,
    READ_PATH_SHAS_SYMBOLS,
    path_uid,
)
from patchstream.stores.graph.keys import scope_of

_CACHED_VIEWS = 16
_EXTEND_AT_MOST = 256  # new commits read one generation a round trip; beyond, the whole walk


@dataclass(frozen=True)
class _CommitGraph:
    head: str | None
    dates: dict[str, str]  # every reachable sha -> its date
    scope_of: dict[str, str]  # sha -> the top layer holding it
    depth: dict[str, int]  # sha -> its longest path to a root (orders commits of one second)
    count: int  # the commits its layers held when it was read
    missing: frozenset[str]  # parents of reachable commits that no layer held

    def order(self, sha: str) -> tuple[str, int, str]:
        return (self.dates[sha], self.depth[sha], sha)


class HistoryReads(DiscussionReads):
    def history(
        self, tenant: str, repo: str, ref: str, path: str | None = None,
        symbol: str | None = None, limit: int = 20,
    ) -> list[CommitHit]:  # fmt: skip
        """The commits reachable from the view's head that changed ``path`` (and, with
        ``symbol``, a hunk in that definition), or every reachable commit; newest first."""
        if not tenant:
            return []
        if path is not None:
            return self.histories(tenant, repo, ref, [path], symbol, limit).get(path, [])
        scopes = [scope_of(tenant, repo, name) for name in self.overlay_chain(tenant, repo, ref)]
        graph = self._commit_graph(tenant, scopes)
        newest = sorted(graph.dates, key=graph.order, reverse=True)
        uids = [f"{graph.scope_of[sha]}|{sha}" for sha in newest[:limit]]
        if not uids:
            return []
        hits = [_hit(props, []) for props, _ in self._read(tenant, READ_COMMITS,
                                                           {"uids": uids})]  # fmt: skip
        return sorted(self._linked(tenant, scopes, hits), key=lambda hit: graph.order(hit.sha),
                      reverse=True)  # fmt: skip

    def histories(
        self, tenant: str, repo: str, ref: str, paths: list[str], symbol: str | None = None,
        limit: int = 20,
    ) -> dict[str, list[CommitHit]]:  # fmt: skip
        """:meth:`history` of several paths of one view, in three round trips and one walk of
        the commit graph (context asks it for its entry files): which reachable commits
        changed each path (keys only), the newest ``limit`` of each in full, their links."""
        if not tenant or not paths:
            return {}
        scopes = [scope_of(tenant, repo, name) for name in self.overlay_chain(tenant, repo, ref)]
        graph = self._commit_graph(tenant, scopes)
        if graph.head is None:
            return {}
        wanted = symbol.rsplit(".", 1)[-1].rsplit("::", 1)[-1] if symbol else None
        puids = {path: path_uid(tenant, repo, path) for path in paths}
        params = {"puids": list(puids.values())}
        shas: dict[str, list[str]] = {}
        for row in self._read(tenant, READ_PATH_SHAS_SYMBOLS if wanted else READ_PATH_SHAS,
                              params):  # fmt: skip
            path, sha, scope = str(row[0]), str(row[1]), row[2]
            if sha not in graph.dates or graph.scope_of[sha] != scope:
                continue  # not reachable, another branch's, or a lower layer's copy
            if wanted is not None and wanted not in [str(n) for n in row[3] or []]:
                continue
            shas.setdefault(path, []).append(sha)
        kept = {path: sorted(set(found), key=graph.order, reverse=True)[:limit]
                for path, found in shas.items()}  # fmt: skip
        pairs = [[puids[path], f"{graph.scope_of[sha]}|{sha}"]
                 for path, found in kept.items() for sha in found]  # fmt: skip
        found_hits: dict[str, dict[str, CommitHit]] = {}
        for path, props, added, removed, symbols in (
            self._read(tenant, READ_PATH_CHANGES, {"pairs": pairs}) if pairs else []
        ):
            names = [str(n) for n in symbols or []]
            change = {"path": path, "added": added, "removed": removed, "symbols": names}
            found_hits.setdefault(str(path), {})[str(props["sha"])] = _hit(props, [change])
        newest = {
            path: [found_hits[path][sha] for sha in kept[path] if sha in found_hits[path]]
            for path in kept
            if path in found_hits  # a commit a push dropped between the two reads
        }
        every = self._linked(tenant, scopes, [hit for hits in newest.values() for hit in hits])
        at = 0
        for path, hits in newest.items():
            newest[path], at = every[at : at + len(hits)], at + len(hits)
        return newest

    def _linked(self, tenant: str, scopes: list[str], hits: list[CommitHit]) -> list[CommitHit]:
        linked = self.link_discussions(tenant, scopes, hits)
        return [replace(hit, linked=linked[hit.sha]) if hit.sha in linked else hit
                for hit in hits]  # fmt: skip

    def _layers(self, tenant: str, scopes: list[str]) -> dict[str, tuple[Any, int]]:
        """Each layer's head and how many commits it holds. The count walks every commit of
        the view (18 ms at 30,000, at every context and ``history`` read), so it is kept
        while no head and no stamp moved: every write that adds or drops a commit bumps its
        scope's stamp in the same transaction. A layer without a stamp (written before
        stamps) is counted at each read."""
        marks = tuple((str(scope), sha, n) for scope, sha, n in
                      self._read(tenant, READ_HEAD_STAMPS, {"scopes": scopes}))  # fmt: skip
        lock, counted = self._history_cache("_history_counts")
        stamped = all(n is not None for _, sha, n in marks if sha is not None)
        with lock:
            kept = counted.get(marks) if stamped else None
        if kept is not None:
            return dict(kept)
        layers: dict[str, tuple[Any, int]] = {str(scope): (sha, int(n)) for scope, sha, n in
                  self._read(tenant, READ_HEADS, {"scopes": scopes})}  # fmt: skip
        if stamped:
            with lock:
                counted[marks] = layers
                while len(counted) > _CACHED_VIEWS:
                    counted.popitem(last=False)
        return layers

    def _commit_graph(self, tenant: str, scopes: list[str]) -> _CommitGraph:
        layers = self._layers(tenant, scopes)
        head = next((str(layers[s][0]) for s in scopes if s in layers and layers[s][0]), None)
        count = sum(n for _, n in layers.values())
        key = (tuple(scopes), head, count)
        cache = self._history_cache()
        with cache[0]:
            if (kept := cache[1].get(key)) is not None:
                cache[1].move_to_end(key)
                return kept  # type: ignore[no-any-return]
            # The view's newest walk, which a push's few commits usually extend.
            base = next((graph for (layers_of, _, _), graph in reversed(cache[1].items())
                         if layers_of == key[0]), None)  # fmt: skip
        graph = self._extended(tenant, scopes, base, head, count) if base else None
        if graph is None:
            graph = self._walked(tenant, scopes, head, count)
        with cache[0]:
            cache[1][key] = graph
            while len(cache[1]) > _CACHED_VIEWS:
                cache[1].popitem(last=False)
        return graph

    def _walked(self, tenant: str, scopes: list[str], head: str | None, count: int) -> _CommitGraph:
        """The view's commit graph from every commit its layers hold (~0.3 s at 30k)."""
        parents: dict[str, list[str]] = {}
        dates: dict[str, str] = {}
        holder: dict[str, str] = {}
        rank = {scope: at for at, scope in enumerate(scopes)}
        for sha, shas, scope, date in self._read(tenant, READ_PARENTS, {"scopes": scopes}):
            if sha in holder and rank[holder[sha]] <= rank[str(scope)]:
                continue
            parents[sha], dates[sha], holder[sha] = list(shas or []), str(date or ""), str(scope)
        reachable: dict[str, str] = {}
        missing: set[str] = set()
        todo = [head] if head in parents else []
        while todo:
            sha = todo.pop()
            if sha in reachable:
                continue
            reachable[sha] = dates[sha]
            for parent in parents[sha]:
                if parent not in parents:
                    missing.add(parent)
                elif parent not in reachable:
                    todo.append(parent)
        return _CommitGraph(head, reachable, {sha: holder[sha] for sha in reachable},
                            _depths(reachable, parents), count, frozenset(missing))  # fmt: skip

    def _extended(
        self, tenant: str, scopes: list[str], base: _CommitGraph, head: str | None, count: int
    ) -> _CommitGraph | None:
        """``base`` grown by the commits a fast-forward added, reading only those; None where
        it cannot be (a head moved elsewhere, commits dropped, a gap of ``base`` filled, or
        more new commits than a push brings), and the whole graph is walked instead.

        Without deletions, the new head's ancestors are the new commits and ``base``'s walk:
        what ``base`` reached keeps its ancestors, unless a commit ``base`` missed (a parent
        outside the ingested window) has since arrived, which is checked.
        """
        if head is None or base.head is None or count < base.count:
            return None
        if head in base.dates:
            if head != base.head or not self._gaps_unfilled(tenant, scopes, base):
                return None
            return replace(base, count=count)  # what came is not reachable (another layer's)
        rank = {scope: at for at, scope in enumerate(scopes)}
        found: dict[str, tuple[list[str], str, str]] = {}
        missing, rows, reached_base, todo = set(base.missing), 0, False, [head]
        while todo:
            if len(found) + len(todo) > _EXTEND_AT_MOST:
                return None
            uids = [f"{scope}|{sha}" for sha in todo for scope in scopes]
            for sha, shas, scope, date in self._read(tenant, READ_COMMIT_PARENTS, {"uids": uids}):
                rows += 1
                if sha in found and rank[found[sha][2]] <= rank[str(scope)]:
                    continue
                found[str(sha)] = (list(shas or []), str(date or ""), str(scope))
            step, todo = todo, []
            for sha in step:
                if sha not in found:
                    missing.add(sha)
                    continue
                for parent in found[sha][0]:
                    reached_base = reached_base or parent == base.head
                    known = parent in base.dates or parent in found or parent in missing
                    if not known and parent not in todo:
                        todo.append(parent)
        if not reached_base or count < base.count + rows:
            return None  # not a fast-forward, or commits went while these came
        if not self._gaps_unfilled(tenant, scopes, base):
            return None
        dates = {**base.dates, **{sha: date for sha, (_, date, _) in found.items()}}
        holders = {**base.scope_of, **{sha: scope for sha, (_, _, scope) in found.items()}}
        depth = _depths(dates, {sha: shas for sha, (shas, _, _) in found.items()}, base.depth)
        return _CommitGraph(head, dates, holders, depth, count,
                            frozenset(missing - found.keys()))  # fmt: skip

    def _gaps_unfilled(self, tenant: str, scopes: list[str], base: _CommitGraph) -> bool:
        """None of the parents ``base`` could not find has arrived since."""
        if not base.missing:
            return True
        uids = [f"{scope}|{sha}" for sha in base.missing for scope in scopes]
        return not self._read(tenant, READ_COMMIT_PARENTS, {"uids": uids})

    def _history_cache(
        self, name: str = "_history_graphs"
    ) -> tuple[threading.Lock, OrderedDict[tuple[Any, ...], Any]]:
        cache = self.__dict__.get(name)
        if cache is None:
            cache = self.__dict__.setdefault(name, (threading.Lock(), OrderedDict()))
        return cache  # type: ignore[no-any-return]


def _depths(
    shas: dict[str, str], parents: dict[str, list[str]], known: dict[str, int] | None = None
) -> dict[str, int]:
    """Each commit's longest path to a root among ``shas`` (iterative: histories are deep),
    on top of the ``known`` depths of an earlier walk."""
    depth: dict[str, int] = dict(known or {})
    for start in shas:
        stack = [start]
        while stack:
            sha = stack[-1]
            if sha in depth:
                stack.pop()
                continue
            waiting = [p for p in parents.get(sha, []) if p in shas and p not in depth]
            if waiting:
                stack += waiting
                continue
            stack.pop()
            depth[sha] = 1 + max((depth[p] for p in parents.get(sha, []) if p in shas),
                                 default=0)  # fmt: skip
    return depth


def _hit(props: dict[str, Any], files: list[dict[str, Any]]) -> CommitHit:
    return CommitHit(
        sha=str(props["sha"]),
        parents=[str(p) for p in props.get("parents") or []],
        author=str(props.get("author") or ""),
        date=str(props.get("date") or ""),
        subject=str(props.get("subject") or ""),
        issues=[str(i) for i in props.get("issues") or []],
        files=files,
    )
