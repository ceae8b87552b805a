"""Callers through two calls on results (``make().step().run()``, issue #56): each RETURNS
edge may be a plain edge (the class in the function's file) or a reference to another file's
class, so every combination is written here, on a real graph."""

from __future__ import annotations

from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import upsert

CHAINS = {
    "pkg/out.py": "class Out:\n    def run(self):\n        return 1\n\n"
    "    def quiet(self):\n        return 0\n",
    # ``make`` returns this file's Maker (a plain edge); ``step`` returns Out (a reference).
    "pkg/maker.py": "from pkg.out import Out\n\n\nclass Maker:\n    def step(self) -> Out:\n"
    "        return Out()\n\n    def same(self) -> 'Maker':\n        return self\n\n\n"
    "def make() -> Maker:\n    return Maker()\n",
    "pkg/give.py": "from pkg.maker import Maker\n\n\ndef give() -> Maker:\n    return Maker()\n",
    "pkg/use.py": "from pkg.give import give\nfrom pkg.maker import make\n\n\n"
    "def chain():\n    make().step().run()\n\n\n"  # plain, then a reference
    "def local():\n    make().same().step()\n\n\n"  # plain, plain
    "def far():\n    give().same().step()\n    give().step().run()\n\n\n"  # reference first
    "def wrong():\n    make().same().run()\n",  # Maker has no run
}


def _callers(graph: CypherGraphStore, tenant: str, symbol: str) -> list[tuple[str, str]]:
    found = graph.callers(tenant, f"app::{symbol}")
    return sorted((n.symbol.id.rsplit("::", 1)[1], n.resolution) for n in found)


def test_callers_through_two_calls_on_results(graph: CypherGraphStore, tenant: str) -> None:
    for version, (path, text) in enumerate(CHAINS.items(), start=1):
        graph.apply(upsert(tenant, path, text, version))
    assert _callers(graph, tenant, "pkg/out.py::Out.run") == [("chain", "exact"), ("far", "exact")]
    steps = _callers(graph, tenant, "pkg/maker.py::Maker.step")
    assert steps == [("chain", "exact"), ("far", "exact"), ("local", "exact")]
    assert _callers(graph, tenant, "pkg/out.py::Out.quiet") == []  # nothing calls it


def test_a_chain_follows_its_middle_class_when_it_changes(
    graph: CypherGraphStore, tenant: str
) -> None:
    """The join is read at walk time: a Maker whose ``step`` stops returning Out loses the
    callers that reached Out through it, and arrival order does not matter."""
    for version, (path, text) in enumerate(reversed(CHAINS.items()), start=1):
        graph.apply(upsert(tenant, path, text, version))
    assert _callers(graph, tenant, "pkg/out.py::Out.run") == [("chain", "exact"), ("far", "exact")]
    untyped = CHAINS["pkg/maker.py"].replace("def step(self) -> Out:", "def step(self):")
    graph.apply(upsert(tenant, "pkg/maker.py", untyped, 10))
    assert _callers(graph, tenant, "pkg/out.py::Out.run") == []
