"""What a hybrid search asks Milvus and which of its answers a reader may see: pure, so the
scoping rules read (and are tested) apart from the client calls in ``milvus.py``."""

from __future__ import annotations

from typing import Any

from patchstream.stores.graph.keys import scope_of
from patchstream.stores.overlays import WORKSPACE_MARK, View
from patchstream.stores.vector.milvus_client import lit, lit_list


def search_filter(
    tenant: str, limit: int, repo: str | None = None, ref: str | None = None,
    path_prefix: str | None = None, kind: str | None = None, view: View | None = None,
) -> tuple[str, int]:  # fmt: skip
    """The filter expression of a search, and how many hits to ask for: with a ``view``,
    as many more as the overlay hides rows (they are dropped after fusion), at most 4x."""
    clauses = [f"tenant == {lit(tenant)}"]
    if view is not None:
        clauses.append(f"scope in {lit_list(view.scopes)}")
        limit = min(limit + sum(len(layer.paths) for layer in view.layers), limit * 4)
    elif repo and ref:
        clauses.append(f"scope == {lit(scope_of(tenant, repo, ref))}")
    elif repo:
        clauses.append(f"repo == {lit(repo)}")
    elif ref:
        clauses.append(f"ref == {lit(ref)}")
    if kind:
        clauses.append(f"kind == {lit(kind)}")
    if path_prefix:
        # LIKE treats '_' as a wildcard: it may match more, ``visible`` checks exactly.
        clauses.append(f"path like {lit(path_prefix.replace('%', '') + '%')}")
    return " and ".join(clauses), limit


def visible(
    entity: dict[str, Any], tenant: str, repo: str | None, path_prefix: str | None,
    view: View | None,
) -> bool:  # fmt: skip
    """Whether a search may return this row: the tenant's (belt and braces: never leak
    across tenants), under the prefix exactly, seen by the view; and without a view and a
    repository, never a workspace overlay's row."""
    if entity.get("tenant") != tenant:
        return False
    if path_prefix and not str(entity["path"]).startswith(path_prefix):
        return False
    if view is not None:
        return view.visible(entity["scope"], entity["path"])
    return not (WORKSPACE_MARK in str(entity["scope"]) and not repo)
