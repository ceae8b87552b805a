"""An overlay reads as the merge of its base and its own files: for random bases and random
overlay edits (upserts, deletes, renames, in any delivery order), every graph query on the
overlay equals the same query on a clean index of base + overlay changes, and the base's
answers never change."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from patchstream.schemas.graph import CallResolution
from patchstream.schemas.state import FileDelta
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.vector.milvus import MilvusVectorStore
from tests.integration.deltas import delete, upsert

PATHS = ["pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/d.py"]
# What each path may hold: most combinations resolve references across files.
VARIANTS = [
    [
        "from pkg.b import helper\n\n\ndef main():\n    return helper(1)\n",
        "def main():\n    return 0\n",
    ],
    [
        "def helper(x):\n    return x\n\n\nclass Base:\n    def run(self):\n"
        "        return helper(2)\n",
        # ``helper`` renamed: base callers of it are unresolved in the overlay, not in the base.
        "def helper2(x):\n    return x\n\n\nclass Base:\n    def run(self):\n"
        "        return helper2(2)\n",
        # A factory another file calls a method on (``make().run()``).
        "class Base:\n    def run(self):\n        return 1\n\n\ndef make() -> Base:\n"
        "    return Base()\n",
    ],
    [
        "from pkg.b import Base\n\n\nclass Job(Base):\n    def run(self):\n        return 1\n",
        "from pkg.b import Base\n\n\nclass Job(Base):\n    pass\n\n\ndef go():\n"
        "    return Job().run()\n",
        "from pkg.b import Base\n\n\nclass Job(Base):\n    pass\n\n\nclass Deep(Job):\n    pass\n",
    ],
    [
        "from pkg.c import Job\n\n\ndef start(j: Job):\n    return j.run()\n",
        "from pkg import b\n\n\ndef use():\n    return b.helper(3)\n",
        "from pkg.a import main\n\n\ndef again():\n    return main()\n",
        # ``run`` through a subclass in another file that may or may not define it.
        "from pkg.c import Job\n\n\ndef later():\n    j = Job()\n    return j.run()\n",
        # Two levels below ``Base``: ``Deep`` inherits ``run`` through ``Job``.
        "from pkg.c import Deep\n\n\ndef deepest():\n    d = Deep()\n    return d.run()\n",
        # What another file's function returns.
        "from pkg.b import make\n\n\ndef viaret():\n    return make().run()\n",
    ],
]
WORKSPACE = "agent-7"
MOVED = "pkg/moved.py"  # where a renamed file goes

base_files = st.dictionaries(st.integers(0, len(PATHS) - 1), st.integers(0, 5))
overlay_ops = st.lists(
    st.tuples(st.integers(0, len(PATHS) - 1), st.integers(-2, 5)), min_size=1, max_size=6
)


def _text(path: int, variant: int) -> str:
    pool = VARIANTS[path]
    return pool[variant % len(pool)]


def _apply(graph: CypherGraphStore, deltas: list[FileDelta]) -> None:
    for delta in deltas:
        graph.apply(delta)


def _answers(
    graph: CypherGraphStore, tenant: str, ref: str, ids: set[str], names: set[str]
) -> dict[str, object]:
    out: dict[str, object] = {}
    for sid in sorted(ids):
        found = graph.symbol(tenant, sid, ref)
        out[f"symbol {sid}"] = None if found is None else (found.kind, found.path, found.start_line)
        for walk, depth in (("callers", 2), ("callees", 2), ("impact", 3)):
            neighbors = getattr(graph, walk)(tenant, sid, depth, ref)
            out[f"{walk} {sid}"] = sorted((n.symbol.id, n.depth, n.resolution) for n in neighbors)
            certain = getattr(graph, walk)(tenant, sid, depth, ref, CallResolution.EXACT)
            out[f"{walk} exact {sid}"] = sorted((n.symbol.id, n.depth) for n in certain)
    # Walks read together (what context does) answer as each symbol's own walk.
    for walk, depth in (("callers", 2), ("callees", 2), ("impact", 3)):
        together = graph.walks(tenant, walk, sorted(ids), depth, ref)
        for sid in sorted(ids):
            got = sorted((n.symbol.id, n.depth, n.resolution) for n in together[sid])
            assert got == out[f"{walk} {sid}"], (walk, sid, ref)
        # A limit keeps each walk's nearest symbols, the same in a view as on a plain ref.
        limited = graph.walks(tenant, walk, sorted(ids), depth, ref, limit=2)
        for sid in sorted(ids):
            depths = [n.depth for n in limited[sid]]
            assert len(depths) == min(2, len(together[sid]))
            assert depths == sorted(depths)
    for name in sorted(names):
        out[f"name {name}"] = sorted(s.id for s in graph.symbols_by_name(tenant, name, "app", ref))
    return out


def _ids_and_names(graph: CypherGraphStore, *tenants: str) -> tuple[set[str], set[str]]:
    ids: set[str] = set()
    for tenant in tenants:
        ids |= {symbol[1] for symbol in graph.snapshot(tenant).symbols}
    names = {sid.rsplit("::", 1)[-1].split("#")[0] for sid in ids}
    return ids, names


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(base=base_files, ops=overlay_ops, seed=st.integers(0, 2**16))
# Each walk the view rebuilds, once for sure: a base caller through a subclass of another
# file, an override across files, a function renamed, a file deleted, files renamed, a call
# through another file's return type.
@example(base={1: 0, 2: 1, 3: 3}, ops=[(0, 0)], seed=0)
@example(base={1: 0, 2: 2, 3: 4}, ops=[(0, 0)], seed=4)
@example(base={1: 0, 2: 0, 3: 0}, ops=[(2, 1), (0, 0)], seed=1)
@example(base={0: 0, 1: 0, 3: 1}, ops=[(1, 1)], seed=2)
@example(base={0: 0, 1: 0, 2: 0, 3: 2}, ops=[(0, -1), (2, 1)], seed=3)
@example(base={0: 0, 1: 0, 2: 0, 3: 0}, ops=[(1, -2), (2, -2)], seed=5)
@example(base={1: 0, 2: 0}, ops=[(0, 1)], seed=6)
# A call on what another file's function returns: the factory dropped, then added.
@example(base={1: 2, 3: 5}, ops=[(1, 0)], seed=7)
@example(base={1: 0, 3: 5}, ops=[(1, 2)], seed=8)
def test_an_overlay_reads_as_a_clean_index_of_its_merge(
    graph: CypherGraphStore, base: dict[int, int], ops: list[tuple[int, int]], seed: int
) -> None:
    layered, merged, plain = (f"{k}{uuid.uuid4().hex[:10]}" for k in "lmp")
    base_deltas = [upsert(layered, PATHS[p], _text(p, v), 1) for p, v in sorted(base.items())]
    # The overlay's edits in order (upsert, delete, or a file renamed to MOVED), and what the
    # merge holds after them.
    state = {PATHS[p]: _text(p, v) for p, v in base.items()}
    overlay: list[FileDelta] = []
    for i, (p, v) in enumerate(ops):
        path, version = PATHS[p], 10 + i
        if v >= 0:
            state[path] = _text(p, v)
            overlay.append(upsert(layered, path, state[path], version, workspace=WORKSPACE))
        elif v == -1:
            state.pop(path, None)
            overlay.append(delete(layered, path, version, workspace=WORKSPACE))
        elif path in state:  # a rename: the old path deleted, the content at the new one
            state[MOVED] = state.pop(path)
            overlay.append(delete(layered, path, version, workspace=WORKSPACE))
            overlay.append(upsert(layered, MOVED, state[MOVED], version, workspace=WORKSPACE))
    random.Random(seed).shuffle(overlay)  # any delivery order
    _apply(graph, base_deltas + overlay)
    _apply(graph, [upsert(merged, path, text, 1) for path, text in state.items()])
    _apply(graph, [upsert(plain, PATHS[p], _text(p, v), 1) for p, v in base.items()])
    try:
        ids, names = _ids_and_names(graph, layered, merged)
        view = _answers(graph, layered, f"main~{WORKSPACE}", ids, names)
        assert view == _answers(graph, merged, "main", ids, names)
        assert _answers(graph, layered, "main", ids, names) == _answers(
            graph, plain, "main", ids, names
        )
    finally:
        for tenant in (layered, merged, plain):
            getattr(graph, "drop_tenant", lambda _t: None)(tenant)


def test_search_on_an_overlay_sees_its_files_over_the_base(
    graph: CypherGraphStore, vectors: MilvusVectorStore, tenant: str
) -> None:
    base = [
        upsert(tenant, "pkg/a.py", "def alpha_shipping():\n    return 'alpha shipping'\n", 1),
        upsert(tenant, "pkg/b.py", "def beta_billing():\n    return 'beta billing'\n", 1),
    ]
    changes = [
        upsert(
            tenant,
            "pkg/a.py",
            "def gamma_refund():\n    return 'gamma refund'\n",
            5,
            workspace=WORKSPACE,
        ),
        delete(tenant, "pkg/b.py", 6, workspace=WORKSPACE),
    ]
    for delta in base + changes:
        graph.apply(delta)
    vectors.apply(base + changes)
    view = graph.view(tenant, "app", f"main~{WORKSPACE}")
    assert view is not None
    in_view = vectors.search(tenant, "shipping billing refund", 10, "app", view.ref, view=view)
    assert {(h.path, h.ref) for h in in_view} == {("pkg/a.py", f"main~{WORKSPACE}")}
    assert "gamma_refund" in in_view[0].text
    in_base = vectors.search(tenant, "shipping billing refund", 10, "app", "main")
    assert {(h.path, h.ref) for h in in_base} == {("pkg/a.py", "main"), ("pkg/b.py", "main")}
    assert all("gamma" not in h.text for h in in_base)


def test_idle_workspaces_expire_and_branches_stay(
    graph: CypherGraphStore, vectors: MilvusVectorStore, tenant: str
) -> None:
    import time

    from patchstream.stores.overlay_service import OverlayService

    base = [upsert(tenant, "pkg/a.py", "def keep_me():\n    return 1\n", 1)]
    writes = [upsert(tenant, "pkg/b.py", "def scratch():\n    return 2\n", 5, workspace=WORKSPACE)]
    for delta in base + writes:
        graph.apply(delta)
    vectors.apply(base + writes)
    graph.declare_overlay(tenant, "app", "feature-x", "main", "branch")
    service = OverlayService(graph, vectors, ttl_s=60)
    assert service.expire(tenant, now=time.time() + 30)[0] == []
    dropped, kept = service.expire(tenant, now=time.time() + 3600)
    assert dropped == [f"app@main~{WORKSPACE}"]
    assert [(o.ref, o.kind) for o in kept] == [("feature-x", "branch")]
    assert [o.ref for o in graph.overlays(tenant)] == ["feature-x"]
    assert graph.symbols_by_name(tenant, "scratch", "app", f"main~{WORKSPACE}") == []
    assert vectors.file_hashes(tenant, "app", f"main~{WORKSPACE}") == {}
    assert [s.name for s in graph.symbols_by_name(tenant, "keep_me", "app", "main")] == ["keep_me"]
    assert service.drop(tenant, "app", "main") is None  # a plain branch is never dropped


def test_a_dropped_overlay_never_comes_back_from_a_replay(
    graph: CypherGraphStore, vectors: MilvusVectorStore, tenant: str, tmp_path: Path
) -> None:
    """Issue #32: a branch dropped 12 s after it was indexed came back when ``up`` replayed
    the outbox. Every delta of the dropped ref up to the drop is now stale in both stores
    (the outbox's entries are done), a later write makes it again, and a second drop is a
    no-op that says so."""
    import time

    from patchstream.embedded.outbox_relay import split_applied
    from patchstream.producers.outbox import Outbox
    from patchstream.schemas.events import PatchEvent
    from patchstream.stores.overlay_service import OverlayService

    before = time.time_ns()
    branch = [
        upsert(tenant, "pkg/y.py", "def feature_y():\n    return 2\n", before, ref="feature-y")
    ]
    graph.declare_overlay(tenant, "app", "feature-y", "main", "branch")
    graph.apply_many(branch)
    vectors.apply(branch)
    outbox = Outbox(tmp_path / "outbox.sqlite")
    outbox.append([PatchEvent(tenant=tenant, repo="app", ref="feature-y", path="pkg/y.py",
                              op="upsert", content="def feature_y():\n    return 2\n",
                              version=before, source="agent")])  # fmt: skip
    service = OverlayService(graph, vectors, ttl_s=60)
    assert service.drop(tenant, "app", "feature-y") == 3  # file, module, function
    # Replays of what was acknowledged before the drop: the outbox's entry and the deltas.
    split = split_applied(outbox.pending(), graph, vectors)
    assert (len(split.dropped), split.applied, split.pending) == (1, [], [])
    assert [r.reason for r in graph.apply_many(branch)] == ["stale"]
    assert vectors.apply(branch).files_applied == 0
    assert graph.symbols_by_name(tenant, "feature_y", "app", "feature-y") == []
    assert vectors.file_hashes(tenant, "app", "feature-y") == {}
    assert service.drop(tenant, "app", "feature-y") == 0  # already dropped: idempotent
    # A write after the drop makes the branch again.
    again = [upsert(tenant, "pkg/y.py", "def feature_y2():\n    return 3\n", time.time_ns(),
                    ref="feature-y")]  # fmt: skip
    assert [r.applied for r in graph.apply_many(again)] == [True]
    assert vectors.apply(again).files_applied == 1
    assert [s.name for s in graph.symbols_by_name(tenant, "feature_y2", "app", "feature-y")] == [
        "feature_y2"
    ]
    outbox.close()


JAVA_SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "java_shop"


def test_an_overlay_of_java_reads_as_its_merge_through_interfaces(graph: CypherGraphStore) -> None:
    """Interfaces in a view: the base's ``report`` calls ``Store.get`` through what
    ``Cache.backing()`` returns (an inferred caller of each implementation); the workspace
    moves that call into a new method of ``Main`` and drops ``Disk``'s implementation."""
    files = {p.relative_to(JAVA_SHOP).as_posix(): p.read_text()
             for p in sorted(JAVA_SHOP.rglob("*.java"))}  # fmt: skip
    main, disk = "com/shop/app/Main.java", "com/shop/store/Disk.java"
    edited = files[main].replace("static String report(", "static String audit(")
    layered, merged = (f"{k}{uuid.uuid4().hex[:10]}" for k in "lm")
    _apply(graph, [upsert(layered, path, text, 1) for path, text in files.items()])
    _apply(graph, [upsert(layered, main, edited, 2, workspace=WORKSPACE),
                   delete(layered, disk, 2, workspace=WORKSPACE)])  # fmt: skip
    state = {**files, main: edited}
    del state[disk]
    _apply(graph, [upsert(merged, path, text, 1) for path, text in state.items()])
    try:
        ids, names = _ids_and_names(graph, layered, merged)
        view = _answers(graph, layered, f"main~{WORKSPACE}", ids, names)
        assert view == _answers(graph, merged, "main", ids, names)
        memory_get = "app::com/shop/store/Memory.java::Memory.get"
        callers = {n.symbol.id: n.resolution for n in
                   graph.callers(layered, memory_get, 1, f"main~{WORKSPACE}")}  # fmt: skip
        assert callers["app::com/shop/app/Main.java::Main.audit"] == "inferred"
        assert "app::com/shop/app/Main.java::Main.report" not in callers
        base = {n.symbol.id for n in graph.callers(layered, memory_get, 1, "main")}
        assert "app::com/shop/app/Main.java::Main.report" in base
    finally:
        for tenant in (layered, merged):
            getattr(graph, "drop_tenant", lambda _t: None)(tenant)


def test_a_dropped_repository_never_comes_back_from_a_replay(
    graph: CypherGraphStore, vectors: MilvusVectorStore, tenant: str, tmp_path: Path
) -> None:
    """Issue #32's "deleting a repository or ref": every ref of the repository is dropped
    (overlays before their base), fenced like an overlay's drop, so the outbox's entries are
    done and a redelivered delta is stale; a base with overlays over it is not dropped alone."""
    import time

    import pytest

    from patchstream.embedded.outbox_relay import split_applied
    from patchstream.producers.outbox import Outbox
    from patchstream.schemas.events import PatchEvent
    from patchstream.stores.overlay_service import OverlayService, RefInUseError

    at = time.time_ns()
    texts = {("main", "pkg/a.py"): "def alpha():\n    return 1\n",
             ("main", "pkg/b.py"): "def beta():\n    return 2\n",
             ("feature-z", "pkg/z.py"): "def zeta():\n    return 3\n"}  # fmt: skip
    deltas = [upsert(tenant, path, text, at, ref=ref) for (ref, path), text in texts.items()]
    graph.declare_overlay(tenant, "app", "feature-z", "main", "branch")
    graph.apply_many(deltas)
    vectors.apply(deltas)
    outbox = Outbox(tmp_path / "outbox.sqlite")
    outbox.append([PatchEvent(tenant=tenant, repo="app", ref=ref, path=path, op="upsert",
                              content=text, version=at, source="agent")
                   for (ref, path), text in texts.items()])  # fmt: skip
    service = OverlayService(graph, vectors, ttl_s=60)
    assert graph.refs(tenant, "app") == ["feature-z", "main"]
    with pytest.raises(RefInUseError, match="base of feature-z"):
        service.drop_ref(tenant, "app", "main")
    assert service.drop_ref(tenant, "app", "nosuch") is None
    assert service.drop_repo(tenant, "app") == {"feature-z": 3, "main": 6}
    split = split_applied(outbox.pending(), graph, vectors)
    assert (len(split.dropped), split.applied, split.pending) == (3, [], [])
    assert [r.reason for r in graph.apply_many(deltas)] == ["stale"] * 3
    assert vectors.apply(deltas).files_applied == 0
    assert graph.refs(tenant, "app") == []
    for ref in ("main", "feature-z"):
        assert vectors.file_hashes(tenant, "app", ref) == {}
        assert service.drop_ref(tenant, "app", ref) == 0  # dropped before: a no-op
    assert service.drop_repo(tenant, "app") == {}
    outbox.close()
