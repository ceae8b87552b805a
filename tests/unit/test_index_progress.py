"""``GET /v1/index/progress`` brings the search copy up to Milvus once both tiers hold what
the client expects, and only then: a remote ``index`` that says complete is searchable at
once (the copy otherwise trails Milvus by up to its idle lag)."""

from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from patchstream.query.index_api import index_router


class _Counts:
    """The one call the route makes of each store (a unit test: the counting itself is
    tested against FalkorDB and Milvus in the integration suite)."""

    def __init__(self, applied: int) -> None:
        self.applied = applied

    def count_applied(self, tenant: str, repo: str, ref: str, since: int) -> int:
        return self.applied


def _client(graph: int, vectors: int, settled: list[str]) -> TestClient:
    stores: Any = (_Counts(graph), _Counts(vectors))
    app = FastAPI()
    app.include_router(index_router(lambda: "acme", lambda: stores, settled.append))
    return TestClient(app)


def test_the_copy_is_settled_when_both_tiers_hold_what_was_expected() -> None:
    settled: list[str] = []
    answer = _client(5, 5, settled).get(
        "/v1/index/progress", params={"repo": "r", "since": 1, "expect": 5}
    )
    assert answer.status_code == 200
    assert answer.json() == {"tenant": "acme", "graph_applied": 5, "vectors_applied": 5}
    assert settled == ["acme"]


def test_the_copy_is_left_alone_while_a_tier_trails_or_nothing_is_expected() -> None:
    settled: list[str] = []
    expecting = {"repo": "r", "since": 1, "expect": 5}
    graph_behind = _client(4, 5, settled)
    assert graph_behind.get("/v1/index/progress", params=expecting).status_code == 200
    vectors_behind = _client(5, 4, settled)
    assert vectors_behind.get("/v1/index/progress", params=expecting).status_code == 200
    old_client = _client(5, 5, settled)  # sends no ``expect``: polls as before
    assert old_client.get("/v1/index/progress", params={"repo": "r", "since": 1}).status_code == 200
    assert settled == []


def test_a_hostile_expect_is_refused() -> None:
    settled: list[str] = []
    client = _client(5, 5, settled)
    for bad in ("-1", str(2**40), "many"):
        answer = client.get("/v1/index/progress", params={"repo": "r", "since": 1, "expect": bad})
        assert answer.status_code == 422, bad
    assert settled == []
