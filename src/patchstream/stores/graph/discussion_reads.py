"""Reads of discussions beside history: the issues and pull/merge requests a commit names or
was merged by (and the issues those close), and the review comments on a file.

Links are made here, by key inside the view's layers: ``#12`` in a commit message is
``issue-12`` or ``pr-12`` (GitHub numbers both alike), ``!12`` is GitLab's ``mr-12``; a
thread whose head or merge commit is the commit's sha is linked too. Nothing crosses a
repository: the keys are looked up only under the view's own scopes.
"""

from __future__ import annotations

import abc
from typing import Any

from patchstream.stores.graph.base import CommitHit
from patchstream.stores.graph.history_statements import (
    READ_MERGED_THREADS,
    READ_PATH_DISCUSSIONS,
    READ_THREAD_NOTES,
    READ_THREADS,
    path_uid,
)
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.overlays import View

MAX_LINKED = 5  # threads shown per commit


def _keys_of(ref: str) -> list[str]:
    number = ref[1:]
    return [f"mr-{number}"] if ref.startswith("!") else [f"issue-{number}", f"pr-{number}"]


def thread_view(props: dict[str, Any], via: str) -> dict[str, Any]:
    return {"key": str(props.get("key") or ""), "kind": str(props.get("kind") or ""),
            "number": int(props.get("number") or 0), "title": str(props.get("title") or ""),
            "state": str(props.get("state") or ""), "url": str(props.get("url") or ""),
            "via": via}  # fmt: skip


class DiscussionReads(abc.ABC):
    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]: ...

    @abc.abstractmethod
    def overlay_chain(self, tenant: str, repo: str, ref: str) -> list[str]: ...

    @abc.abstractmethod
    def view(self, tenant: str, repo: str, ref: str) -> View | None: ...

    def _threads(self, tenant: str, scopes: list[str], keys: set[str]) -> dict[str, dict[str, Any]]:
        """The threads of ``keys`` held in the view, the top layer's copy of each."""
        if not keys:
            return {}
        uids = [f"{scope}|{key}" for scope in scopes for key in sorted(keys)]
        return _top_layer(scopes, [row[0] for row in self._read(tenant, READ_THREADS,
                                                               {"uids": uids})])  # fmt: skip

    def link_discussions(
        self, tenant: str, scopes: list[str], hits: list[CommitHit]
    ) -> dict[str, list[dict[str, Any]]]:
        """Each hit's sha -> the threads it names or was merged by, then the issues those
        threads close (two or three round trips for every hit together)."""
        if not hits:
            return {}
        named = {hit.sha: [k for ref in hit.issues for k in _keys_of(ref)] for hit in hits}
        threads = self._threads(tenant, scopes, {k for keys in named.values() for k in keys})
        merged_rows = self._read(tenant, READ_MERGED_THREADS,
                                 {"scopes": scopes, "shas": [hit.sha for hit in hits]})  # fmt: skip
        merged = _top_layer(scopes, [row[0] for row in merged_rows])
        threads.update(merged)
        closed_keys = {str(k) for t in threads.values() for k in t.get("closes") or []}
        closed = self._threads(tenant, scopes, closed_keys - set(threads))
        threads.update(closed)
        found: dict[str, list[dict[str, Any]]] = {}
        for hit in hits:
            linked: dict[str, dict[str, Any]] = {}
            direct = [threads[k] for k in named[hit.sha] if k in threads]
            direct += [t for t in merged.values() if hit.sha in (t.get("commits") or [])]
            for props in direct:
                key = str(props["key"])
                linked.setdefault(key, thread_view(props, "named" if key in named[hit.sha]
                                                   else "merged"))  # fmt: skip
                for closes in props.get("closes") or []:
                    if closes in threads and closes not in linked:
                        linked[closes] = thread_view(threads[closes], f"closed by {key}")
            if linked:
                found[hit.sha] = list(linked.values())[:MAX_LINKED]
        return found

    def thread_notes(self, tenant: str, repo: str, ref: str, thread: str) -> list[str]:
        """The paths of the notes on ``thread`` in ``ref``'s own layer (a deleted thread's
        notes are deleted with it: the parse stage asks this)."""
        if not tenant:
            return []
        scope = scope_of(tenant, repo, ref)
        rows = self._read(tenant, READ_THREAD_NOTES, {"scope": scope, "thread": thread})
        return sorted(str(fuid)[len(scope) + 1 :] for (fuid,) in rows)

    def path_discussions(
        self, tenant: str, repo: str, ref: str, paths: list[str], limit: int = 20
    ) -> dict[str, list[dict[str, Any]]]:
        """Review comments on each path (newest first), with their thread's title."""
        if not tenant or not paths:
            return {}
        view = self.view(tenant, repo, ref)
        scopes = view.scopes if view is not None else [scope_of(tenant, repo, ref)]
        puids = [path_uid(tenant, repo, path) for path in dict.fromkeys(paths)]
        rows = self._read(tenant, READ_PATH_DISCUSSIONS, {"puids": puids, "scopes": scopes})
        if view is not None:  # an overlay behind its base does not see later notes
            rows = [[path, props] for path, props in rows
                    if view.visible(str(props["scope"]), _page_path(props))]  # fmt: skip
        threads = self._threads(tenant, scopes, {str(props["thread"]) for _, props in rows})
        found: dict[str, list[dict[str, Any]]] = {}
        for path, props in rows:
            thread = threads.get(str(props["thread"]), {})
            found.setdefault(str(path), []).append({
                "key": str(props["key"]), "thread": str(props["thread"]),
                "title": str(thread.get("title") or ""), "author": str(props.get("author") or ""),
                "date": str(props.get("date") or ""), "url": str(props.get("url") or ""),
            })  # fmt: skip
        return {path: sorted(notes, key=lambda n: (n["date"], n["key"]), reverse=True)[:limit]
                for path, notes in found.items()}  # fmt: skip


def _page_path(props: dict[str, Any]) -> str:
    return str(props.get("file_uid") or "")[len(str(props["scope"])) + 1 :]


def _top_layer(scopes: list[str], rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    rank = {scope: at for at, scope in enumerate(scopes)}
    found: dict[str, dict[str, Any]] = {}
    for props in rows:
        key = str(props.get("key") or "")
        held = found.get(key)
        if held is None or rank.get(str(props["scope"]), 99) < rank.get(str(held["scope"]), 99):
            found[key] = props
    return found
