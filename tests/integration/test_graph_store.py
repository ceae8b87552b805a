"""The graph store contract, run against every adapter (FalkorDB here; Memgraph in compose)."""

from __future__ import annotations

from pathlib import Path

from patchstream.embedded.services import Service, free_port, start_falkordb
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.graph.falkordb import FalkorGraphStore
from tests.integration.deltas import delete, upsert

UTIL = """\
def helper(x):
    return x + 1


class Base:
    def run(self):
        return helper(1)
"""

APP = """\
from pkg.util import helper, Base


def main():
    return helper(2)


class Job(Base):
    def run(self):
        return main()
"""

UTIL_ID = "app::pkg/util.py::"
APP_ID = "app::pkg/app.py::"


def _edges(graph: CypherGraphStore, tenant: str) -> set[tuple[str, str, str]]:
    prefix = f"{tenant}|app|main|"
    return {
        (src.removeprefix(prefix), kind, dst.removeprefix(prefix))
        for src, kind, dst in graph.snapshot(tenant).edges
    }


def _normalized(graph: CypherGraphStore, tenant: str) -> tuple[set[str], set[str], int]:
    snap = graph.snapshot(tenant)
    symbols = {repr(s).replace(tenant, "T") for s in snap.symbols}
    edges = {repr(e).replace(tenant, "T") for e in snap.edges}
    return symbols, edges, graph.want_count(tenant)


def test_apply_then_read_back(graph: CypherGraphStore, tenant: str) -> None:
    result = graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
    assert result.applied and result.symbols_written == 5
    names = {s.qualified_name for s in graph.file_symbols(tenant, "app", "main", "pkg/util.py")}
    assert names == {"pkg/util.py", "pkg.util", "helper", "Base", "Base.run"}
    helper = graph.symbol(tenant, UTIL_ID + "helper")
    assert helper is not None and helper.signature == "def helper(x)" and helper.start_line == 1
    assert [s.id for s in graph.symbols_by_name(tenant, "Base.run")] == [UTIL_ID + "Base.run"]
    version = graph.file_version(tenant, "app", "main", "pkg/util.py")
    assert version is not None and version.version == 1 and not version.deleted
    repo = graph.repo_version(tenant, "app", "main")
    assert repo.files == 1 and repo.max_version == 1 and repo.last_applied_at is not None


def test_definers_answer_every_name_of_a_question_in_one_read(
    graph: CypherGraphStore, tenant: str
) -> None:
    """What search asks of the graph for the code a question names: the files defining each
    name or qualified name, of the repository and ref read, never another tenant's."""
    graph.apply_many([upsert(tenant, "pkg/util.py", UTIL, 1), upsert(tenant, "pkg/app.py", APP, 1),
                      upsert(tenant, "pkg/util.py", UTIL, 1, repo="other")])  # fmt: skip
    found = graph.definers(tenant, ["run", "Base.run", "helper", "nowhere"], "app", "main")
    assert found == {"run": {"pkg/util.py", "pkg/app.py"}, "Base.run": {"pkg/util.py"},
                     "helper": {"pkg/util.py"}, "nowhere": set()}  # fmt: skip
    # A name defined in more files than ``at_most`` comes back with none (a hub name says
    # nothing of where a question belongs); the others as they are.
    assert graph.definers(tenant, ["run", "Base.run"], "app", "main", at_most=1) == {
        "run": set(), "Base.run": {"pkg/util.py"}}  # fmt: skip
    assert graph.definers(tenant, ["run"], "app", "main", at_most=2) == {
        "run": {"pkg/util.py", "pkg/app.py"}}  # fmt: skip
    assert graph.definers(tenant + "x", ["run"], "app", "main") == {"run": set()}
    assert graph.definers(tenant, ['x" OR 1=1 //', "run\n"], "app", "main") == {
        'x" OR 1=1 //': set(), "run\n": set()}  # fmt: skip


def test_version_fence_makes_replays_and_old_deliveries_no_ops(
    graph: CypherGraphStore, tenant: str
) -> None:
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 5))
    before = graph.snapshot(tenant)
    assert not graph.apply(upsert(tenant, "pkg/util.py", UTIL, 5)).applied  # duplicate
    older = UTIL.replace("helper", "old_helper")
    assert graph.apply(upsert(tenant, "pkg/util.py", older, 3)).reason == "stale"
    assert graph.snapshot(tenant) == before


def test_cross_file_edges_resolve_in_either_arrival_order(
    graph: CypherGraphStore, tenant: str
) -> None:
    other = tenant + "b"
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
    graph.apply(upsert(tenant, "pkg/app.py", APP, 1))
    graph.apply(upsert(other, "pkg/app.py", APP, 1))
    graph.apply(upsert(other, "pkg/util.py", UTIL, 1))
    edges = _edges(graph, tenant)
    assert (APP_ID + "main", "CALLS", UTIL_ID + "helper") in edges
    assert (APP_ID + "Job", "INHERITS_FROM", UTIL_ID + "Base") in edges
    assert (APP_ID + "Job.run", "OVERRIDES", UTIL_ID + "Base.run") in edges
    assert (APP_ID + "<module>", "IMPORTS", UTIL_ID + "helper") in edges
    assert _normalized(graph, tenant) == _normalized(graph, other)
    getattr(graph, "drop_tenant", lambda _t: None)(other)


def test_removed_target_turns_edges_back_into_references(
    graph: CypherGraphStore, tenant: str
) -> None:
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
    graph.apply(upsert(tenant, "pkg/app.py", APP, 1))
    renamed = UTIL.replace("def helper", "def renamed_helper").replace(
        "return helper(1)", "return renamed_helper(1)"
    )
    graph.apply(upsert(tenant, "pkg/util.py", renamed, 2))
    edges = _edges(graph, tenant)
    assert not any(dst == UTIL_ID + "helper" for _, _, dst in edges)
    assert (APP_ID + "main", "REFERS:CALLS", "ref:helper@pkg.util") in edges
    assert graph.callers(tenant, UTIL_ID + "renamed_helper")[0].symbol.id == UTIL_ID + "Base.run"
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 3))
    assert (APP_ID + "main", "CALLS", UTIL_ID + "helper") in _edges(graph, tenant)


def test_delete_and_rename_leave_nothing_of_the_old_path(
    graph: CypherGraphStore, tenant: str
) -> None:
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
    graph.apply(upsert(tenant, "pkg/app.py", APP, 1))
    # A rename is a delete of the old path and an upsert of the new one.
    graph.apply(delete(tenant, "pkg/app.py", 2))
    graph.apply(upsert(tenant, "pkg/jobs.py", APP, 2))
    assert graph.file_symbols(tenant, "app", "main", "pkg/app.py") == []
    snapshot = graph.snapshot(tenant)
    assert not any("pkg/app.py" in "|".join(s) for s in snapshot.symbols)
    assert not any("pkg/app.py" in src or "pkg/app.py" in dst for src, _, dst in snapshot.edges)
    fence = graph.file_version(tenant, "app", "main", "pkg/app.py")
    assert fence is not None and fence.deleted and fence.version == 2
    assert not graph.apply(upsert(tenant, "pkg/app.py", APP, 1)).applied  # late, older upsert
    jobs = "app::pkg/jobs.py::"
    assert (jobs + "main", "CALLS", UTIL_ID + "helper") in _edges(graph, tenant)


def test_callers_callees_and_impact(graph: CypherGraphStore, tenant: str) -> None:
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
    graph.apply(upsert(tenant, "pkg/app.py", APP, 1))
    one = {(n.symbol.id, n.depth) for n in graph.callers(tenant, UTIL_ID + "helper", 1)}
    assert one == {(APP_ID + "main", 1), (UTIL_ID + "Base.run", 1)}
    two = {(n.symbol.id, n.depth) for n in graph.callers(tenant, UTIL_ID + "helper", 2)}
    assert two == one | {(APP_ID + "Job.run", 2)}
    callees = {n.symbol.id for n in graph.callees(tenant, APP_ID + "Job.run", 2)}
    assert callees == {APP_ID + "main", UTIL_ID + "helper"}
    impact = {n.symbol.id for n in graph.impact(tenant, UTIL_ID + "Base.run", 3)}
    assert impact == {APP_ID + "Job.run"}
    signature = graph.callers(tenant, UTIL_ID + "helper", 1)[0].symbol.signature
    assert signature in ("def main()", "def run(self)")


def test_tenants_never_see_each_other(graph: CypherGraphStore, tenant: str) -> None:
    other = tenant + "x"
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
    graph.apply(upsert(other, "pkg/secret.py", "def canary_b():\n    return 1\n", 1))
    assert graph.symbols_by_name(tenant, "canary_b") == []
    assert graph.symbol(tenant, "app::pkg/secret.py::canary_b") is None
    assert graph.file_symbols(tenant, "app", "main", "pkg/secret.py") == []
    assert not any("canary_b" in repr(s) for s in graph.snapshot(tenant).symbols)
    assert graph.symbols_by_name("", "helper") == [] and graph.snapshot("").symbols == set()
    assert graph.callers("", UTIL_ID + "helper", 2) == []
    assert [s.name for s in graph.symbols_by_name(other, "canary_b")] == ["canary_b"]
    getattr(graph, "drop_tenant", lambda _t: None)(other)


def test_delete_ref_removes_a_branch(graph: CypherGraphStore, tenant: str) -> None:
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1, ref="feature"))
    assert graph.delete_ref(tenant, "app", "feature") == 5
    assert graph.file_symbols(tenant, "app", "feature", "pkg/util.py") == []
    assert len(graph.file_symbols(tenant, "app", "main", "pkg/util.py")) == 5


def test_falkordb_keeps_a_graph_per_tenant_on_disk(tmp_path: Path, tenant: str) -> None:
    service = start_falkordb(tmp_path / "falkordb", free_port())
    try:
        store = FalkorGraphStore(port=service.port)
        store.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
        store.apply(upsert(tenant + "b", "pkg/app.py", APP, 1))
        assert {store.graph_name(tenant), store.graph_name(tenant + "b")} <= set(
            store.db.list_graphs()
        )
        store.close()
    finally:
        service.stop()
    restarted = start_falkordb(tmp_path / "falkordb", free_port())
    try:
        store = FalkorGraphStore(port=restarted.port)
        assert len(store.file_symbols(tenant, "app", "main", "pkg/util.py")) == 5
        version = store.file_version(tenant, "app", "main", "pkg/util.py")
        assert version is not None and version.version == 1
        store.close()
    finally:
        restarted.stop()


def test_large_files_are_written_in_chunked_batches(graph: CypherGraphStore, tenant: str) -> None:
    big = "\n".join(f"def f{i}():\n    return f{i + 1}()\n" for i in range(1200))
    assert graph.apply(upsert(tenant, "big.py", big, 1)).symbols_written == 1202
    assert len(graph.file_symbols(tenant, "app", "main", "big.py")) == 1202
    callees = graph.callees(tenant, "app::big.py::f10", 2)
    assert [(n.symbol.name, n.depth) for n in callees] == [("f11", 1), ("f12", 2)]


def test_file_state_reads_back_what_was_applied(graph: CypherGraphStore, tenant: str) -> None:
    delta = upsert(tenant, "pkg/app.py", APP, 4)
    graph.apply(delta)
    graph.apply(upsert(tenant, "pkg/util.py", UTIL, 1))  # resolves app's references
    state = graph.file_state(tenant, "app", "main", "pkg/app.py")
    assert state is not None and state.version == 4
    assert state.symbols == delta.symbols
    assert set(state.edges) == set(delta.edges)  # references stay references, resolved or not
    graph.apply(delete(tenant, "pkg/app.py", 5))
    assert graph.file_state(tenant, "app", "main", "pkg/app.py") is None


def test_scope_counts_count_what_the_branch_holds(graph: CypherGraphStore, tenant: str) -> None:
    deltas = [upsert(tenant, "pkg/app.py", APP, 1), upsert(tenant, "pkg/util.py", UTIL, 1)]
    for delta in deltas:
        graph.apply(delta)
    symbols = sum(len(d.symbols) for d in deltas)
    references = {(e.src, e.type, e.dst) for d in deltas for e in d.edges if e.ref is not None}
    held = graph.scope_counts(tenant, "app", "main")
    assert held[0] == symbols and held[2] == len(references) > 0
    assert held[1] > 0  # DEFINES at least, between the files' symbols
    assert graph.scope_counts(tenant, "app", "other") == (0, 0, 0)
    graph.apply(delete(tenant, "pkg/app.py", 2))  # its references go with it
    app = {(e.src, e.type, e.dst) for e in deltas[0].edges if e.ref is not None}
    assert graph.scope_counts(tenant, "app", "main")[2] == len(references - app)


def test_scope_counts_of_fences_written_before_they_counted_references(
    falkordb_service: Service, tenant: str
) -> None:
    """Fences of an older graph carry no count: the references are counted on the graph."""
    graph = FalkorGraphStore(port=falkordb_service.port, password=falkordb_service.password)
    try:
        for version, (path, text) in enumerate((("pkg/app.py", APP), ("pkg/util.py", UTIL)), 1):
            graph.apply(upsert(tenant, path, text, version))
        counted = graph.scope_counts(tenant, "app", "main")
        raw = graph.db.select_graph(graph.graph_name(tenant))
        raw.query("MATCH (f:Fence {path: 'pkg/app.py'}) REMOVE f.references")
        left = raw.query("MATCH (f:Fence) RETURN count(f), count(f.references)").result_set
        assert left == [[2, 1]]
        assert graph.scope_counts(tenant, "app", "main") == counted
        assert counted[2] > 0
    finally:
        graph.close()


def test_impact_on_a_fan_out_graph_is_level_by_level_and_capped(
    graph: CypherGraphStore, tenant: str
) -> None:
    # Every function calls every earlier one: the number of paths explodes with depth (the
    # old path pattern enumerated them all), the number of distinct callers does not.
    lines = ["def f0():\n    return 0\n"]
    for i in range(1, 60):
        calls = " + ".join(f"f{j}()" for j in range(i))
        lines.append(f"def f{i}():\n    return {calls}\n")
    graph.apply(upsert(tenant, "pkg/hub.py", "\n\n".join(lines), 1))
    target = "app::pkg/hub.py::f0"
    found = graph.impact(tenant, target, depth=5)
    assert {n.symbol.name for n in found} == {f"f{i}" for i in range(1, 60)}
    assert all(n.depth == 1 for n in found)  # each calls f0 directly: shortest depth wins
    chain = graph.impact(tenant, "app::pkg/hub.py::f57", depth=5)
    assert [n.symbol.name for n in chain] == ["f58", "f59"]
    previous = graph.max_walk_rows
    graph.max_walk_rows = 10
    try:
        capped = graph.impact(tenant, target, depth=5)
    finally:
        graph.max_walk_rows = previous
    assert len(capped) == 10
    # A walk's own limit (what context asks for) reads nearest first, each start its own.
    limited = graph.walks(tenant, "impact", [target, "app::pkg/hub.py::f57"], 5, limit=3)
    assert len(limited[target]) == 3 and all(n.depth == 1 for n in limited[target])
    assert [n.symbol.name for n in limited["app::pkg/hub.py::f57"]] == ["f58", "f59"]
    assert len(graph.walks(tenant, "impact", [target], 5, limit=5000)[target]) == 59


def test_first_writes_of_new_graphs_under_concurrent_readers_never_hang(
    falkordb_service: Service,
) -> None:
    """Reads racing the write that creates a tenant's graph once deadlocked FalkorDB (nothing
    answered, not even PING). Readers and writers hammer fresh graphs; everything finishes."""
    import threading
    import uuid as _uuid

    tenants = [f"race{_uuid.uuid4().hex[:8]}" for _ in range(6)]
    errors: list[BaseException] = []

    def reader(tenant: str) -> None:
        store = FalkorGraphStore(port=falkordb_service.port, timeout_s=20)
        try:
            for _ in range(40):
                store.file_version(tenant, "app", "main", "pkg/util.py")
                store.symbols_by_name(tenant, "helper")
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    def writer(tenant: str) -> None:
        store = FalkorGraphStore(port=falkordb_service.port, timeout_s=20)
        try:
            store.apply(upsert(tenant, "pkg/util.py", UTIL, 1))
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=reader, args=(t,)) for t in tenants for _ in range(2)]
    threads += [threading.Thread(target=writer, args=(t,)) for t in tenants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a client hung"
    assert errors == []
    check = FalkorGraphStore(port=falkordb_service.port)
    try:
        assert check.db.connection.ping()
        for tenant in tenants:
            assert check.file_version(tenant, "app", "main", "pkg/util.py") is not None
            check.drop_tenant(tenant)
    finally:
        check.close()


ADAPTERS = """\
class BaseAdapter:
    def send(self, request):
        raise NotImplementedError


class HTTPAdapter(BaseAdapter):
    def send(self, request):
        return request
"""

SESSIONS = """\
from pkg.adapters import HTTPAdapter


class Session:
    def __init__(self):
        self.adapter = HTTPAdapter()

    def send(self, request):
        return self.adapter.send(request)


def mount(adapter: HTTPAdapter):
    adapter.send(None)
"""


def test_callers_through_a_typed_receiver_across_files(
    graph: CypherGraphStore, tenant: str
) -> None:
    """``self.adapter.send(...)`` and ``adapter.send(...)`` on an annotated parameter are
    callers of ``HTTPAdapter.send`` in another file, in either arrival order."""
    adapters = "app::pkg/adapters.py::"
    sessions = "app::pkg/sessions.py::"
    graph.apply(upsert(tenant, "pkg/sessions.py", SESSIONS, 1))  # before its target exists
    graph.apply(upsert(tenant, "pkg/adapters.py", ADAPTERS, 1))
    callers = {n.symbol.id for n in graph.callers(tenant, adapters + "HTTPAdapter.send")}
    assert callers == {sessions + "Session.send", sessions + "mount"}
    assert graph.callers(tenant, adapters + "BaseAdapter.send") == []


def test_callers_through_a_subclass_that_inherits_the_method(
    graph: CypherGraphStore, tenant: str
) -> None:
    """``Sub().send()`` in a third file calls ``Base.send``: ``Sub`` does not define it."""
    base = (
        "class Base:\n    def send(self):\n        return 1\n\n    def other(self):\n        pass\n"
    )
    subclass = (
        "from pkg.base import Base\n\n\nclass Sub(Base):\n    def other(self):\n        pass\n"
    )
    use = (
        "from pkg.sub import Sub\n\n\ndef go():\n    s = Sub()\n    s.send()\n\n\n"
        "def stay():\n    Sub().other()\n    s = Sub()\n    s.other()\n"
    )
    for version, (path, text) in enumerate(
        (("pkg/use.py", use), ("pkg/sub.py", subclass), ("pkg/base.py", base)), start=1
    ):
        graph.apply(upsert(tenant, path, text, version))
    callers = {n.symbol.id for n in graph.callers(tenant, "app::pkg/base.py::Base.send")}
    assert callers == {"app::pkg/use.py::go"}
    # Sub overrides other(): callers of Base.other do not include Sub.other's callers.
    assert graph.callers(tenant, "app::pkg/base.py::Base.other") == []


RE_EXPORTED = {
    # ``NFA`` lives in a private child module; its parent re-exports it, and users name it
    # by the parent's path only.
    "src/nfa/thompson/nfa.rs": "pub struct NFA(u8);\n\nimpl NFA {\n"
    "    pub fn pattern_len(&self) -> usize {\n        1\n    }\n}\n",
    "src/nfa/thompson/mod.rs": "mod nfa;\n\npub use self::nfa::NFA;\n",
    "src/meta/regex.rs": "use crate::nfa::thompson::NFA;\n\n"
    "pub fn patterns(nfa: &NFA) -> usize {\n    nfa.pattern_len()\n}\n\n"
    "pub fn other(nfa: &crate::nfa::thompson::NFA) -> usize {\n    nfa.pattern_len()\n}\n",
}


def test_callers_through_a_rust_re_export(graph: CypherGraphStore, tenant: str) -> None:
    """``nfa.pattern_len()`` with ``nfa: &NFA`` imported from the module that re-exports
    ``NFA`` (``pub use self::nfa::NFA``) calls ``NFA.pattern_len`` of the child module, in
    whichever order the three files arrive."""
    for index, order in enumerate((list(RE_EXPORTED), list(reversed(RE_EXPORTED)))):
        each = f"{tenant}{index}"
        for version, path in enumerate(order, start=1):
            graph.apply(upsert(each, path, RE_EXPORTED[path], version))
        target = "app::src/nfa/thompson/nfa.rs::NFA.pattern_len"
        callers = {n.symbol.id for n in graph.callers(each, target)}
        assert callers == {"app::src/meta/regex.rs::patterns", "app::src/meta/regex.rs::other"}


RETURNED_SUBCLASS = {
    "pkg/use.py": "from pkg.sub import make\n\n\ndef go():\n    make().send()\n",
    # ``build`` returns ``Sub`` from another file; ``own`` returns a class defining ``send``.
    "pkg/far.py": "from pkg.sub import Sub, Own\n\n\ndef build() -> Sub:\n    return Sub()\n\n\n"
    "def own() -> Own:\n    return Own()\n",
    "pkg/call.py": "from pkg.far import build, own\n\n\ndef away():\n    build().send()\n\n\n"
    "def mine():\n    own().send()\n",
    "pkg/sub.py": "from pkg.base import Base\n\n\nclass Sub(Base):\n    pass\n\n\n"
    "def make() -> Sub:\n    return Sub()\n\n\nclass Own(Sub):\n    def send(self):\n"
    "        return 2\n",
    "pkg/base.py": "class Base:\n    def send(self):\n        return 1\n\n"
    "    def quiet(self):\n        pass\n",
}


def test_callers_through_a_function_returning_a_subclass_that_inherits_the_method(
    graph: CypherGraphStore, tenant: str
) -> None:
    """``make().send()`` with ``make() -> Sub`` (another file) calls ``Base.send``; the walk
    reads a method's subclasses only where such a call of its name exists in the scope."""
    for version, (path, text) in enumerate(RETURNED_SUBCLASS.items(), start=1):
        graph.apply(upsert(tenant, path, text, version))
    callers = graph.callers(tenant, "app::pkg/base.py::Base.send")
    assert sorted((n.symbol.id, n.resolution) for n in callers) == [
        ("app::pkg/call.py::away", "exact"), ("app::pkg/use.py::go", "exact"),
    ]  # fmt: skip
    own = graph.callers(tenant, "app::pkg/sub.py::Own.send")
    assert [n.symbol.id for n in own] == ["app::pkg/call.py::mine"]
    assert graph.callers(tenant, "app::pkg/base.py::Base.quiet") == []  # no call of its name


def test_a_graph_written_before_result_call_marks_gets_them_when_opened(
    falkordb_service: Service, tenant: str
) -> None:
    """A graph whose Wants lack ``rtail`` (written before it existed) gets it once, when a
    store first creates its index: the call through a returned subclass is found again."""
    graph = FalkorGraphStore(port=falkordb_service.port, password=falkordb_service.password)
    try:
        for version, (path, text) in enumerate(RETURNED_SUBCLASS.items(), start=1):
            graph.apply(upsert(tenant, path, text, version))
        named = graph.graph_name(tenant)
        raw = graph.db.select_graph(named)
        raw.query("DROP INDEX FOR (n:Want) ON (n.rtail)")
        raw.query("MATCH (w:Want) WHERE w.rtail IS NOT NULL REMOVE w.rtail")
        assert graph.callers(tenant, "app::pkg/base.py::Base.send") == []  # as it read before
        reopened = FalkorGraphStore(port=falkordb_service.port,
                                    password=falkordb_service.password)  # fmt: skip
        try:
            reopened.apply(upsert(tenant, "pkg/other.py", "X = 1\n", 9))
            found = reopened.callers(tenant, "app::pkg/base.py::Base.send")
            assert sorted(n.symbol.id for n in found) == ["app::pkg/call.py::away",
                                                           "app::pkg/use.py::go"]  # fmt: skip
        finally:
            reopened.close()
    finally:
        graph.drop_tenant(tenant)
        graph.close()


PRICED_TS = {
    "src/priced.ts": "export interface Priced {\n  price(): number;\n}\n",
    "src/item.ts": 'import { Priced } from "./priced";\n\n'
    "export class Item implements Priced {\n  price(): number {\n    return 1;\n  }\n}\n",
    "src/cart.ts": 'import { Priced } from "./priced";\n\n'
    "export function total(p: Priced): number {\n  return p.price();\n}\n",
}


def test_callers_of_an_implementation_include_calls_on_its_interface(
    graph: CypherGraphStore, tenant: str
) -> None:
    """TypeScript: ``p.price()`` with ``p: Priced`` may run ``Item.price``."""
    for version, (path, text) in enumerate(PRICED_TS.items(), start=1):
        graph.apply(upsert(tenant, path, text, version))
    interface_callers = graph.callers(tenant, "app::src/priced.ts::Priced.price")
    assert {n.symbol.id for n in interface_callers} == {"app::src/cart.ts::total"}
    implementation_callers = graph.callers(tenant, "app::src/item.ts::Item.price")
    assert {n.symbol.id for n in implementation_callers} == {"app::src/cart.ts::total"}


GO_SHAPES = """\
package shapes

type Store interface {
\tPut(key string) error
\tGet(key string) string
}

type Memory struct{}

func (m *Memory) Put(key string) error { return nil }

func (m *Memory) Get(key string) string { return key }

type Half struct{}

func (h *Half) Put(key string) error { return nil }

func Save(s Store) {
\ts.Put("k")
}
"""


def test_go_callers_of_an_interface_method_reach_the_types_that_satisfy_it(
    graph: CypherGraphStore, tenant: str
) -> None:
    """Structural: ``Memory`` has every method of ``Store``; ``Half`` lacks ``Get``."""
    graph.apply(upsert(tenant, "shapes/shapes.go", GO_SHAPES, 1))
    prefix = "app::shapes/shapes.go::"
    assert {n.symbol.id for n in graph.callers(tenant, prefix + "Store.Put")} == {prefix + "Save"}
    assert {n.symbol.id for n in graph.callers(tenant, prefix + "Memory.Put")} == {prefix + "Save"}
    assert graph.callers(tenant, prefix + "Half.Put") == []


def test_walks_return_properties_with_quotes_and_backslashes_intact(
    graph: CypherGraphStore, tenant: str
) -> None:
    # FalkorDB's toJSON() leaves quotes inside strings unescaped (823 of scipy's 32k symbols
    # did not parse), so walks read properties as maps: this is what they must survive.
    source = (
        'def f():\n    return 1\n\n\ndef g(sep="\\\\", quote=\'"\', s="a\\"b"):\n    return f()\n'
    )
    delta = upsert(tenant, "pkg/quotes.py", source, 1)
    graph.apply(delta)
    expected = next(s for s in delta.symbols if s.name == "g")
    assert '"' in (expected.signature or "") and "\\" in (expected.signature or "")
    callers = graph.callers(tenant, "app::pkg/quotes.py::f", depth=2)
    assert [n.symbol.signature for n in callers] == [expected.signature]
