"""The query service's in-process copy of the chunk index, against a real Milvus Lite:
it loads, follows writes, edits, deletions and ref drops, keeps tenants apart, reads views
like the Milvus path, and hands a tenant back to Milvus when it cannot serve it."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TypeVar

import pytest

from patchstream.stores.graph.keys import scope_of
from patchstream.stores.overlays import Layer, View
from patchstream.stores.vector import milvus, milvus_rows
from patchstream.stores.vector.file_ranker import shipped_ranker
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.search_mirror import SearchMirror
from tests.integration.deltas import delete, upsert
from tests.integration.test_vector_store import CODE as LOADER

T = TypeVar("T")
BILLING = "def compute_invoice_total(lines):\n    return sum(l.amount for l in lines)\n"


def _until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture
def mirror(vectors: MilvusVectorStore) -> Iterator[SearchMirror]:
    found = SearchMirror(vectors, lag_s=0.2)
    yield found
    found.close()


def _ready(mirror: SearchMirror, tenant: str) -> None:
    mirror.warm(tenant)
    _until(lambda: mirror.state(tenant) == "ready")


def _without_milvus(mirror: SearchMirror, search: Callable[[], T]) -> T:
    """Run ``search`` with Milvus's client refusing every call: the copy answers alone."""
    client = mirror.store.client

    class Refusing:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"the copy called Milvus ({name}) on the read path")

    mirror.store.client = Refusing()  # type: ignore[assignment]
    try:
        return search()
    finally:
        mirror.store.client = client


def _symbols(hits: list[milvus.SearchHit] | None) -> list[str]:
    assert hits is not None, "the mirror did not serve the search"
    return [h.symbol_id for h in hits]


def test_loads_then_answers_like_milvus_and_follows_edits_and_deletes(
    vectors: MilvusVectorStore, mirror: SearchMirror, tenant: str
) -> None:
    vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                   upsert(tenant, "billing.py", BILLING, 1)])  # fmt: skip
    assert mirror.search(tenant, "parse_config") is None  # not loaded yet: Milvus serves
    assert mirror.last_applied(tenant, "app") is None
    _ready(mirror, tenant)
    # Freshness from the copy's stamps, without asking Milvus: the same answer.
    assert mirror.last_applied(tenant, "app") == vectors.last_applied(tenant, "app")
    assert mirror.last_applied(tenant, "other-repo") == (0, None)
    # A file's applied version, for freshness's owed writes: the copy's, Milvus's answer.
    assert _without_milvus(mirror, lambda: mirror.file_version(tenant, "app", "main",
                                                               "billing.py")) == 1  # fmt: skip
    assert vectors.file_version(tenant, "app", "main", "billing.py") == 1
    assert mirror.file_version(tenant, "app", "main", "absent.py") is None
    with pytest.raises(LookupError):
        mirror.file_version("a-tenant-never-loaded", "app", "main", "billing.py")
    for query in ("parse_config configuration file", "compute_invoice_total amount"):
        mine = _without_milvus(mirror, lambda q=query: mirror.search(tenant, q, limit=3))
        theirs = vectors.search(tenant, query, limit=3)
        assert _symbols(mine)[0] == theirs[0].symbol_id
        assert mine[0] == replace(theirs[0], score=mine[0].score)  # every field as Milvus has it
        assert mine[0].version == 1
    # An edit: after a sync (what /v1/wait does) the new text is found, the old is gone.
    edited = BILLING.replace("compute_invoice_total", "compute_credit_note")
    vectors.apply([upsert(tenant, "billing.py", edited, 2)])
    mirror.sync(tenant)
    assert mirror.state(tenant) == "ready"
    files, newest = mirror.last_applied(tenant, "app") or (0, None)
    assert (files, newest) == vectors.last_applied(tenant, "app") and files == 2
    assert _symbols(mirror.search(tenant, "compute_credit_note", limit=1)) == [
        "app::billing.py::compute_credit_note"
    ]
    stale = mirror.search(tenant, "compute_invoice_total", limit=10)
    assert "app::billing.py::compute_invoice_total" not in _symbols(stale)
    # Without a sync call the background follower catches up within its lag.
    vectors.apply([delete(tenant, "billing.py", 3)])
    _until(lambda: all(h.path != "billing.py" for h in mirror.search(tenant, "compute") or []))
    assert all(h.path == "cfg/loader.py" for h in mirror.search(tenant, "compute", limit=10) or [])


def test_tenants_stay_apart_and_filters_match_the_milvus_path(
    vectors: MilvusVectorStore, mirror: SearchMirror, tenant: str
) -> None:
    other = tenant + "q"
    vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                   upsert(tenant, "cfg/loader.py", LOADER, 1, repo="lib")])  # fmt: skip
    vectors.apply([upsert(other, "secret.py", "def canary_zebra_7431():\n    return 1\n", 1)])
    _ready(mirror, tenant)
    _ready(mirror, other)
    leaked = mirror.search(tenant, "canary_zebra_7431", limit=10)
    assert leaked is not None and all("canary" not in h.text for h in leaked)
    assert _symbols(mirror.search(other, "canary_zebra_7431", limit=1)) == [
        "app::secret.py::canary_zebra_7431"
    ]
    assert mirror.search("", "anything") == []
    for how in ({"repo": "lib"}, {"repo": "app", "ref": "main"}, {"ref": "main"},
                {"path_prefix": "cfg/", "kind": "class"}, {"path_prefix": "nope/"}):  # fmt: skip
        hits = mirror.search(tenant, "load config", 20, **how) or []
        mine = {(h.repo, h.chunk_id) for h in hits}
        theirs = {(h.repo, h.chunk_id) for h in vectors.search(tenant, "load config", 20, **how)}
        # Milvus ranks by BM25 alone (the rows with a word of the question), the copy fuses
        # dense ranks too: every row Milvus finds, the copy finds, and each passes the filter.
        assert theirs <= mine, how
        assert all(h.repo == how.get("repo", h.repo) and h.ref == how.get("ref", h.ref)
                   and h.path.startswith(how.get("path_prefix", ""))
                   and h.kind == how.get("kind", h.kind) for h in hits), how  # fmt: skip
    assert mirror.search(tenant, "load config", 20, path_prefix="nope/") == []


def test_a_view_hides_the_base_copy_and_a_dropped_ref_is_forgotten(
    vectors: MilvusVectorStore, mirror: SearchMirror, tenant: str
) -> None:
    vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                   upsert(tenant, "billing.py", BILLING, 1)])  # fmt: skip
    renamed = LOADER.replace("parse_config", "read_settings")
    vectors.apply([upsert(tenant, "cfg/loader.py", renamed, 2, workspace="w1")])
    _ready(mirror, tenant)
    base, top = scope_of(tenant, "app", "main"), scope_of(tenant, "app", "main", "w1")
    view = View(tenant, "app", "main~w1", (Layer(top, frozenset({"cfg/loader.py"})),
                                           Layer(base, frozenset())))  # fmt: skip
    seen = mirror.search(tenant, "parse_config read_settings", 20, repo="app", ref="main~w1",
                         view=view)  # fmt: skip
    assert seen and {h.ref for h in seen if h.path == "cfg/loader.py"} == {"main~w1"}
    assert "app::cfg/loader.py::read_settings" in _symbols(seen)
    assert any(h.path == "billing.py" and h.ref == "main" for h in seen)
    plain = mirror.search(tenant, "parse_config read_settings", 20, repo="app", ref="main")
    assert {h.ref for h in plain or []} == {"main"}  # the base never sees the workspace
    vectors.delete_ref(tenant, "app", "main~w1")
    mirror.forget(tenant, top)
    assert mirror.search(tenant, "read_settings", 20, repo="app", ref="main~w1") == []


def test_a_big_file_and_a_tenant_over_the_cap(
    vectors: MilvusVectorStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(milvus_rows, "MAX_FILE_ROWS", 2)  # records list no rows: read by scan
    many = "\n\n".join(f"def f{i}():\n    return 'marker_{i}'\n" for i in range(6))
    vectors.apply([upsert(tenant, "many.py", many, 1)])
    mirror = SearchMirror(vectors, lag_s=0.2)
    try:
        _ready(mirror, tenant)
        assert "app::many.py::f4" in _symbols(mirror.search(tenant, "marker_4", limit=3))
        vectors.apply([upsert(tenant, "many.py", many.replace("marker_4", "gone"), 2)])
        mirror.sync(tenant)
        assert "app::many.py::f4" not in _symbols(mirror.search(tenant, "marker_4", limit=3))
    finally:
        mirror.close()
    capped = SearchMirror(vectors, lag_s=0.2, max_rows=3)
    try:
        capped.warm(tenant)
        _until(lambda: capped.state(tenant).startswith("off"))
        assert capped.search(tenant, "marker_1") is None  # Milvus serves this tenant
    finally:
        capped.close()


def test_a_loaded_copy_is_frozen_out_of_full_collections_and_still_freed(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    """The copy's rows go to the permanent generation once loaded (a full collection no
    longer walks them), in steps as it grows; a frozen row a sync replaces is still freed."""
    vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                   upsert(tenant, "billing.py", BILLING, 1)])  # fmt: skip
    frozen = gc.get_freeze_count()
    copy = SearchMirror(vectors, lag_s=0.1, freeze_loaded=True, freeze_min_rows=2)
    try:
        _ready(copy, tenant)
        _until(lambda: gc.get_freeze_count() > frozen)
        index = copy._mirrors[tenant].index
        (billing,) = [index.payloads[row] for row in index.rows_of_path("billing.py")]
        held = sys.getrefcount(billing)
        assert copy._mirrors[tenant].frozen_rows == index.live
        edited = BILLING.replace("compute_invoice_total", "compute_credit_note")
        vectors.apply([upsert(tenant, "billing.py", edited, 2)])
        copy.sync(tenant)
        assert _symbols(copy.search(tenant, "compute_credit_note", limit=1)) == [
            "app::billing.py::compute_credit_note"
        ]
        # Replaced: the copy holds the frozen row no more, so its reference count frees it.
        assert sys.getrefcount(billing) < held
    finally:
        copy.close()
        gc.unfreeze()  # the rest of the suite collects as usual


def test_a_quiet_tenant_is_followed_less_often_and_a_write_brings_the_short_lag_back(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    """An idle stack's Milvus answered the copy's stamp scan twice a second for nobody."""
    paced = SearchMirror(vectors, lag_s=0.05, idle_lag_s=1.0, idle_after_s=2.0)
    try:
        vectors.apply([upsert(tenant, "billing.py", BILLING, 1)])
        _ready(paced, tenant)
        state = paced._mirrors[tenant]
        _until(lambda: state.pause_s == 1.0)  # quiet for idle_after_s: the long wait
        edited = BILLING.replace("compute_invoice_total", "compute_credit_note")
        vectors.apply([upsert(tenant, "billing.py", edited, 2)])
        # Found within the long lag without a sync call, and the short lag is back.
        _until(lambda: state.pause_s == 0.05, timeout=10.0)
        found = paced.search(tenant, "compute_credit_note", limit=1) or []
        assert _symbols(found) == ["app::billing.py::compute_credit_note"]
    finally:
        paced.close()


def test_a_search_right_after_a_start_waits_for_the_copy_not_for_milvus(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    """Issue #55: for ~11 s after a restart, searches were served by Milvus before the copy
    loaded and ranked differently. A search now waits (bounded) for the copy to load."""
    vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                   upsert(tenant, "billing.py", BILLING, 1)])  # fmt: skip
    waiting = SearchMirror(vectors, lag_s=0.2, ready_wait_s=60.0)
    try:
        assert waiting.state(tenant) == "loading" and waiting.loading() is None  # not asked yet
        hits = waiting.search(tenant, "compute_invoice_total amount", limit=1)  # starts the load
        assert _symbols(hits) == ["app::billing.py::compute_invoice_total"]  # the copy's answer
        assert waiting.state(tenant) == "ready" and waiting.loading() is None
    finally:
        waiting.close()
    impatient = SearchMirror(vectors, lag_s=0.2)  # no wait: Milvus answers, as before
    try:
        assert impatient.search(tenant, "compute_invoice_total", limit=1) is None
        assert impatient.state(tenant).startswith("loading")
        _until(lambda: impatient.state(tenant) == "ready")
    finally:
        impatient.close()


def test_chunks_of_named_symbols_come_from_the_copy_as_milvus_has_them(
    vectors: MilvusVectorStore, mirror: SearchMirror, tenant: str
) -> None:
    """A context's class members are read from the copy: a Milvus Lite query costs time
    linear in the collection (its live-row mask), whatever it selects."""
    vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                   upsert(tenant, "billing.py", BILLING, 1)])  # fmt: skip
    wanted = [
        "app::cfg/loader.py::Loader.load",
        "app::cfg/loader.py::parse_config",
        "app::billing.py::compute_invoice_total",
        "app::nowhere.py::gone",
        "no-colons",
    ]
    assert mirror.chunks_for_symbols(tenant, wanted) is None  # not loaded: Milvus answers
    _ready(mirror, tenant)
    for ref in (None, "main", "other"):
        mine = _without_milvus(mirror, lambda r=ref: mirror.chunks_for_symbols(tenant, wanted, r))
        theirs = vectors.chunks_for_symbols(tenant, wanted, ref)
        assert mine == theirs, ref
    held = mirror.chunks_for_symbols(tenant, wanted)
    assert held is not None and {h.symbol_id for h in held} == set(wanted[:3])
    assert mirror.chunks_for_symbols(tenant + "x", wanted) is None  # another tenant: not here
    vectors.apply([delete(tenant, "billing.py", 2)])
    mirror.sync(tenant)
    held = mirror.chunks_for_symbols(tenant, wanted)
    assert held is not None and {h.symbol_id for h in held} == set(wanted[:2])


def test_a_class_members_chunks_come_from_the_copy_by_prefix(
    vectors: MilvusVectorStore, mirror: SearchMirror, tenant: str
) -> None:
    """A context's class entry reads its members' chunks from the copy by id prefix (from
    the graph, a large file's every symbol came back with its docstring), in file order,
    only of that class, file and ref; Milvus answers while the copy cannot."""
    vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                   upsert(tenant, "billing.py", BILLING, 1)])  # fmt: skip
    prefix = "app::cfg/loader.py::Loader."
    assert mirror.chunks_under(tenant, "cfg/loader.py", prefix) is None  # not loaded
    _ready(mirror, tenant)
    held = _without_milvus(mirror, lambda: mirror.chunks_under(tenant, "cfg/loader.py", prefix))
    assert held is not None and [h.symbol_id for h in held] == ["app::cfg/loader.py::Loader.load"]
    assert held == vectors.chunks_for_symbols(tenant, ["app::cfg/loader.py::Loader.load"])
    assert mirror.chunks_under(tenant, "cfg/loader.py", prefix, "other") == []  # another ref
    assert mirror.chunks_under(tenant, "billing.py", prefix) == []  # another file
    assert mirror.chunks_under(tenant, "cfg/loader.py", "app::cfg/loader.py::Load.") == []
    assert mirror.chunks_under(tenant + "x", "cfg/loader.py", prefix) is None


def test_a_search_during_a_waits_sync_waits_for_it_and_sees_the_write(
    vectors: MilvusVectorStore, mirror: SearchMirror, tenant: str
) -> None:
    """A search that found ``/v1/wait``'s sync in flight went to Milvus, whose first hybrid
    search builds the BM25 index of every segment (and keeps it): it now waits for that sync
    and answers from the copy, with the write the wait reported."""
    vectors.apply([upsert(tenant, "billing.py", BILLING, 1)])
    _ready(mirror, tenant)
    state = mirror._mirrors[tenant]
    edited = BILLING.replace("compute_invoice_total", "compute_credit_note")
    vectors.apply([upsert(tenant, "billing.py", edited, 2)])
    found: list[list[milvus.SearchHit] | None] = []
    with state.sync_lock:  # as ``sync`` does: the fence is set, its sync not done yet
        state.fence = time.monotonic()
        searcher = threading.Thread(
            target=lambda: found.append(mirror.search(tenant, "compute_credit_note", limit=1))
        )
        searcher.start()
        searcher.join(0.3)
        assert searcher.is_alive() and not found  # it waits on the sync, not on Milvus
        mirror._sync(tenant, state)
    searcher.join(10)
    assert _symbols(found[0]) == ["app::billing.py::compute_credit_note"]


def test_a_search_behind_a_fence_no_sync_clears_goes_to_milvus_after_its_wait(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    """The wait is bounded: a sync that never finishes (Milvus failing) leaves the search
    to Milvus after ``fence_wait_s``, as before."""
    bounded = SearchMirror(vectors, lag_s=0.2, fence_wait_s=0.2)
    try:
        vectors.apply([upsert(tenant, "billing.py", BILLING, 1)])
        _ready(bounded, tenant)
        state = bounded._mirrors[tenant]
        with state.sync_lock:
            state.fence = time.monotonic()
            started = time.monotonic()
            answered = []
            searcher = threading.Thread(
                target=lambda: answered.append(bounded.search(tenant, "compute_invoice_total"))
            )
            searcher.start()
            searcher.join(10)
            assert answered == [None] and time.monotonic() - started >= 0.2
    finally:
        bounded.close()


def test_the_learned_file_order_keeps_tenants_filters_and_views(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    ranked = SearchMirror(vectors, lag_s=0.2, ranker=shipped_ranker())
    try:
        other = tenant + "r"
        vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1),
                       upsert(tenant, "billing.py", BILLING, 1),
                       upsert(tenant, "cfg/loader.py", LOADER, 1, repo="lib")])  # fmt: skip
        vectors.apply([upsert(other, "secret.py", "def canary_zebra_7431():\n    return 1\n", 1)])
        renamed = LOADER.replace("parse_config", "read_settings")
        vectors.apply([upsert(tenant, "cfg/loader.py", renamed, 2, workspace="w1")])
        _ready(ranked, tenant)
        _ready(ranked, other)
        leaked = ranked.search(tenant, "canary_zebra_7431 config", limit=10) or []
        assert leaked and all("canary" not in h.text for h in leaked)
        for how in ({"repo": "lib"}, {"repo": "app", "ref": "main"}, {"path_prefix": "billing"},
                    {"path_prefix": "cfg/", "kind": "class"}):  # fmt: skip
            hits = ranked.search(tenant, "load config invoice total", 20, **how)
            assert hits, how
            assert all(h.repo == how.get("repo", h.repo) and h.ref == how.get("ref", h.ref)
                       and h.path.startswith(how.get("path_prefix", ""))
                       and h.kind == how.get("kind", h.kind) for h in hits), how  # fmt: skip
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True), how
        # The question's title names the billing code: its file leads.
        first = ranked.search(tenant, "compute_invoice_total is wrong\nthe config loads fine",
                              10, repo="app", ref="main")  # fmt: skip
        assert first and first[0].path == "billing.py"
        base, top = scope_of(tenant, "app", "main"), scope_of(tenant, "app", "main", "w1")
        view = View(tenant, "app", "main~w1", (Layer(top, frozenset({"cfg/loader.py"})),
                                               Layer(base, frozenset())))  # fmt: skip
        seen = ranked.search(tenant, "parse_config read_settings", 20, repo="app",
                             ref="main~w1", view=view)  # fmt: skip
        assert seen and {h.ref for h in seen if h.path == "cfg/loader.py"} == {"main~w1"}
    finally:
        ranked.close()


def test_a_row_a_flush_hid_from_a_read_is_read_again_not_lost(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    """Milvus Lite swaps its memtable out before a flush writes it: a point read in that
    window finds a just-written row in neither, and the copy listed the file as synced
    without it (the team-server test's ``index`` then searched nothing). The first read of
    the new chunk rows here returns none of them, as in that window; the copy reads the file
    again within the same ``sync`` and finds the write."""
    patient = SearchMirror(vectors, lag_s=60.0)  # only ``sync`` follows Milvus here
    real = vectors.client
    hidden: list[list[str]] = []

    class FlushWindow:
        """The real client; the first read by key of rows no sync has asked for comes back
        empty, once."""

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def get(self, collection: str, ids: list[str], **kw: object) -> object:
            if collection == vectors.chunks and not hidden and state_ready():
                hidden.append(list(ids))
                return []
            return real.get(collection, ids=ids, **kw)

    try:
        vectors.apply([upsert(tenant, "cfg/loader.py", LOADER, 1)])
        _ready(patient, tenant)

        def state_ready() -> bool:
            return patient.state(tenant) == "ready"

        vectors.apply([upsert(tenant, "billing.py", BILLING, 1)])
        vectors.client = FlushWindow()  # type: ignore[assignment]
        try:
            patient._sync(tenant, patient._mirrors[tenant])  # the follower's own sync
        finally:
            vectors.client = real
        assert hidden, "the window never hid a read"
        # Freshness reads the copy's stamps: a file whose rows are still owed is not held
        # (a CI run's freshness said "applied" of a file a search then did not find).
        assert patient.file_version(tenant, "app", "main", "billing.py") is None
        assert patient._mirrors[tenant].retry
        patient.sync(tenant)
        assert patient.file_version(tenant, "app", "main", "billing.py") == 1
        assert _symbols(patient.search(tenant, "compute_invoice_total", limit=1)) == [
            "app::billing.py::compute_invoice_total"
        ]
        assert not patient._mirrors[tenant].retry
    finally:
        patient.close()
