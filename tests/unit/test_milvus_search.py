"""The scoping rules of a Milvus hybrid search (``stores.vector.milvus_search``): what it asks
for, and which rows a reader may see of what comes back."""

from __future__ import annotations

from patchstream.stores.overlays import Layer, View
from patchstream.stores.vector.milvus_search import search_filter, visible

OVERLAY, BASE = "t|app|main~w", "t|app|main"
VIEW = View("t", "app", "main~w", (Layer(OVERLAY, frozenset({"a.py", "b.py", "c.py"})),
                                   Layer(BASE, frozenset())))  # fmt: skip


def _row(scope: str, path: str, tenant: str = "t") -> dict[str, object]:
    return {"tenant": tenant, "scope": scope, "path": path}


def test_the_filter_scopes_to_the_tenant_and_what_the_read_names() -> None:
    assert search_filter("t", 10) == ('tenant == "t"', 10)
    where, limit = search_filter("t", 10, repo="app", ref="main", kind="function")
    assert where == 'tenant == "t" and scope == "t|app|main" and kind == "function"'
    assert limit == 10
    assert search_filter("t", 5, repo="app")[0] == 'tenant == "t" and repo == "app"'
    assert search_filter("t", 5, ref="dev")[0] == 'tenant == "t" and ref == "dev"'


def test_a_hostile_prefix_cannot_widen_the_like_and_quotes_stay_literal() -> None:
    where, _ = search_filter("t", 5, path_prefix='src/%" or tenant != "x')
    assert where == 'tenant == "t" and path like "src/\\" or tenant != \\"x%"'


def test_a_view_asks_for_as_many_more_as_its_overlay_hides_at_most_four_times() -> None:
    where, limit = search_filter("t", 10, view=VIEW)
    assert where == f'tenant == "t" and scope in ["{OVERLAY}", "{BASE}"]'
    assert limit == 13  # 10 + the overlay's 3 paths
    assert search_filter("t", 1, view=VIEW)[1] == 4  # 1 + 3 capped at 4x


def test_rows_of_another_tenant_outside_the_prefix_or_hidden_are_not_returned() -> None:
    assert not visible(_row(BASE, "x.py", tenant="other"), "t", None, None, None)
    assert not visible(_row(BASE, "src_x.py"), "t", None, "src/", None)  # LIKE's '_' matched
    assert visible(_row(BASE, "src/x.py"), "t", None, "src/", None)
    assert not visible(_row(BASE, "a.py"), "t", "app", None, VIEW)  # the overlay's copy wins
    assert visible(_row(OVERLAY, "a.py"), "t", "app", None, VIEW)
    assert visible(_row(BASE, "z.py"), "t", "app", None, VIEW)


def test_a_plain_read_without_a_repository_never_sees_a_workspace_row() -> None:
    assert not visible(_row(OVERLAY, "a.py"), "t", None, None, None)
    assert visible(_row(OVERLAY, "a.py"), "t", "app", None, None)
    assert visible(_row(BASE, "a.py"), "t", None, None, None)
