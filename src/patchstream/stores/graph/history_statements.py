"""History in the graph: what a ``_commits/`` file's delta writes, and the reads over it.

- ``(:Commit {uid: scope|sha, tenant, repo, scope, file_uid, sha, parents, author, date,
  subject})``: one per commit file of a ref (so a ref's history is its own files, dropped
  with them: a force-push's lost commits go with their files' deletes).
- ``(:Commit)-[:CHANGED {added, removed, symbols}]->(:Path {uid: tenant|repo|path})``: the
  files it touched and the definitions its hunks fell in. Path nodes are shared by every ref
  of a repository, so "which commits changed this file" is one index lookup.
- ``(:HistoryHead {uid: scope, file_uid, sha})``: the commit ``_commits/HEAD`` names. A view
  reads only the commits reachable from its top layer's head.
- ``(:HistoryStamp {uid: scope, n})``: bumped by every write that adds or drops a commit of
  the scope, in the same transaction: a read counts a view's commits (18 ms at 30,000) only
  when a stamp or a head moved since it last counted.
- ``(:Discussion {uid: scope|key, tenant, repo, scope, file_uid, key, thread, kind, number,
  note, title, state, author, date, opened, url, labels, closes, commits})``: one per
  ``_discussions/`` page (a thread or a note on one), ``-[:DISCUSSED]->(:Path)`` for the
  files a review comment is on. Links to commits and closed issues are by key at read time,
  so a page may arrive before or after what it names.
"""

from __future__ import annotations

from typing import Any

from patchstream.schemas.discussions import DISCUSSIONS_DIR, epoch_of
from patchstream.schemas.state import FileDelta

HISTORY_INDEXES = (
    ("Commit", "uid"), ("Commit", "file_uid"), ("Commit", "scope"), ("Path", "uid"),
    ("HistoryHead", "uid"), ("HistoryHead", "file_uid"), ("HistoryStamp", "uid"),
    ("Discussion", "uid"), ("Discussion", "file_uid"), ("Discussion", "scope"),
)  # fmt: skip

DROP_COMMITS = "UNWIND $fuids AS fuid MATCH (k:Commit {file_uid: fuid}) DETACH DELETE k"
DROP_HEADS = "UNWIND $fuids AS fuid MATCH (h:HistoryHead {file_uid: fuid}) DELETE h"
ADD_COMMITS = (
    "UNWIND $rows AS row CREATE (k:Commit) SET k = row.props "
    "WITH k, row UNWIND row.changes AS ch MERGE (p:Path {uid: ch.puid}) "
    "ON CREATE SET p.tenant = row.props.tenant, p.repo = row.props.repo, p.path = ch.path "
    "CREATE (k)-[:CHANGED {added: ch.added, removed: ch.removed, symbols: ch.symbols}]->(p)"
)
ADD_HEADS = "UNWIND $rows AS row MERGE (h:HistoryHead {uid: row.uid}) SET h += row.props"
BUMP_HISTORY = (
    "UNWIND $uids AS uid MERGE (s:HistoryStamp {uid: uid}) SET s.n = coalesce(s.n, 0) + 1"
)
DROP_DISCUSSIONS = "UNWIND $fuids AS fuid MATCH (d:Discussion {file_uid: fuid}) DETACH DELETE d"
ADD_DISCUSSIONS = (
    "UNWIND $rows AS row CREATE (d:Discussion) SET d = row.props "
    "WITH d, row UNWIND row.paths AS x MERGE (p:Path {uid: x.puid}) "
    "ON CREATE SET p.tenant = row.props.tenant, p.repo = row.props.repo, p.path = x.path "
    "CREATE (d)-[:DISCUSSED]->(p)"
)
HISTORY_STATEMENTS = (DROP_COMMITS, DROP_HEADS, DROP_DISCUSSIONS, ADD_COMMITS, ADD_HEADS,
                      ADD_DISCUSSIONS, BUMP_HISTORY)  # fmt: skip

# Reads (``$scopes``: the view's layers).
# Each layer's head and commit count, in one round trip.
READ_HEADS = (
    "UNWIND $scopes AS scope OPTIONAL MATCH (h:HistoryHead {uid: scope}) "
    "OPTIONAL MATCH (k:Commit {scope: scope}) RETURN scope, h.sha, count(k)"
)
# Heads and stamps only: index lookups, no count (``history_reads._layers``).
READ_HEAD_STAMPS = (
    "UNWIND $scopes AS scope OPTIONAL MATCH (h:HistoryHead {uid: scope}) "
    "OPTIONAL MATCH (s:HistoryStamp {uid: scope}) RETURN scope, h.sha, s.n"
)
READ_PARENTS = (
    "UNWIND $scopes AS scope MATCH (k:Commit {scope: scope}) "
    "RETURN k.sha, k.parents, k.scope, k.date"
)
# The records of given commits (``$uids``: scope|sha), for a push's few new commits.
READ_COMMIT_PARENTS = (
    "UNWIND $uids AS uid MATCH (k:Commit {uid: uid}) RETURN k.sha, k.parents, k.scope, k.date"
)
# Which commits changed each path: keys only (a file of sympy's core has hundreds; their
# whole records were most of a context's time). ``READ_PATH_CHANGES`` then reads the few a
# reader keeps. The reader keeps the view's scopes: a ``WHERE k.scope IN $scopes`` here made
# FalkorDB scan every commit of the scope by its index first (~100 ms at 30k commits,
# against ~1 ms from the path).
READ_PATH_SHAS = (
    "UNWIND $puids AS puid MATCH (p:Path {uid: puid})<-[:CHANGED]-(k:Commit) "
    "RETURN p.path, k.sha, k.scope"
)
READ_PATH_SHAS_SYMBOLS = (
    "UNWIND $puids AS puid MATCH (p:Path {uid: puid})<-[c:CHANGED]-(k:Commit) "
    "RETURN p.path, k.sha, k.scope, c.symbols"
)
READ_PATH_CHANGES = (
    "UNWIND $pairs AS pair MATCH (p:Path {uid: pair[0]})<-[c:CHANGED]-(k:Commit {uid: pair[1]}) "
    "RETURN p.path, properties(k), c.added, c.removed, c.symbols"
)
READ_COMMITS = (
    "UNWIND $uids AS uid MATCH (k:Commit {uid: uid}) OPTIONAL MATCH (k)-[c:CHANGED]->(p:Path) "
    "RETURN properties(k), collect([p.path, c.added, c.removed, c.symbols])"
)
READ_SNAPSHOT = (
    "MATCH (k:Commit) WHERE k.tenant = $tenant OPTIONAL MATCH (k)-[c:CHANGED]->(p:Path) "
    "RETURN k.scope, k.sha, k.parents, collect([p.path, c.added, c.removed, c.symbols])"
)
READ_THREADS = "UNWIND $uids AS uid MATCH (d:Discussion {uid: uid}) RETURN properties(d)"
# Threads whose head or merge commit is one of ``$shas`` (a rebase merge names no PR).
READ_MERGED_THREADS = (
    "UNWIND $scopes AS scope MATCH (d:Discussion {scope: scope}) "
    "WHERE d.note = '' AND size(d.commits) > 0 AND any(c IN d.commits WHERE c IN $shas) "
    "RETURN properties(d)"
)
READ_PATH_DISCUSSIONS = (
    "UNWIND $puids AS puid MATCH (p:Path {uid: puid})<-[:DISCUSSED]-(d:Discussion) "
    "WHERE d.scope IN $scopes RETURN p.path, properties(d)"
)
READ_THREAD_NOTES = (
    "MATCH (d:Discussion {scope: $scope}) WHERE d.thread = $thread AND d.note <> '' "
    "RETURN d.file_uid"
)
READ_SNAPSHOT_HEADS = "MATCH (h:HistoryHead) WHERE h.tenant = $tenant RETURN h.uid, h.sha"


def path_uid(tenant: str, repo: str, path: str) -> str:
    return f"{tenant}|{repo}|{path}"


def history_statements(delta: FileDelta, scope: str, fuid: str) -> list[tuple[str, Any]]:
    """What a delta of ``_commits/`` or ``_discussions/`` writes beside its file: its commit,
    head or discussion replaced."""
    if delta.path.startswith(DISCUSSIONS_DIR):
        return _discussion_statements(delta, scope, fuid)
    statements: list[tuple[str, Any]] = []
    if delta.commit_info is not None or delta.op == "delete" or delta.history_head is not None:
        statements += [(DROP_COMMITS, {"fuids": [fuid]}), (DROP_HEADS, {"fuids": [fuid]}),
                       (BUMP_HISTORY, {"uids": [scope]})]  # fmt: skip
    if delta.op == "delete":
        return statements
    info = delta.commit_info
    if info is not None:
        props = {"uid": f"{scope}|{info.sha}", "tenant": delta.tenant, "repo": delta.repo,
                 "scope": scope, "file_uid": fuid, "sha": info.sha, "parents": list(info.parents),
                 "author": info.author, "date": info.date, "subject": info.subject,
                 "changes_cut": info.changes_cut, "issues": list(info.issues)}  # fmt: skip
        changes = [{"puid": path_uid(delta.tenant, delta.repo, c.path), "path": c.path,
                    "added": c.added, "removed": c.removed, "symbols": list(c.symbols)}
                   for c in info.changes]  # fmt: skip
        statements.append((ADD_COMMITS, {"rows": [{"props": props, "changes": changes}]}))
    if delta.history_head is not None:
        props = {"tenant": delta.tenant, "file_uid": fuid, "sha": delta.history_head}
        statements.append((ADD_HEADS, {"rows": [{"uid": scope, "props": props}]}))
    return statements


def _discussion_statements(delta: FileDelta, scope: str, fuid: str) -> list[tuple[str, Any]]:
    statements: list[tuple[str, Any]] = [(DROP_DISCUSSIONS, {"fuids": [fuid]})]
    info = delta.discussion_info
    if delta.op == "delete" or info is None:
        return statements
    props = {"uid": f"{scope}|{info.key}", "tenant": delta.tenant, "repo": delta.repo,
             "scope": scope, "file_uid": fuid, "key": info.key, "thread": info.thread,
             "kind": info.kind, "number": info.number, "note": info.note, "title": info.title,
             "state": info.state, "author": info.author, "date": info.date, "url": info.url,
             "labels": list(info.labels), "closes": list(info.closes),
             "commits": list(info.commits), "opened": epoch_of(info.date)}  # fmt: skip
    paths = [{"puid": path_uid(delta.tenant, delta.repo, path), "path": path}
             for path in info.paths]  # fmt: skip
    statements.append((ADD_DISCUSSIONS, {"rows": [{"props": props, "paths": paths}]}))
    return statements
