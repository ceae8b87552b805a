"""The Milvus boundary types a load that outlasts the client's wait by the load state: still
loading is a store not answering yet (retried like an outage), anything else a refusal."""

from __future__ import annotations

from typing import Any

import pytest
from pymilvus import MilvusException
from pymilvus.client.types import LoadState

from patchstream.errors import StoreRefused, StoreUnavailable
from patchstream.stores.vector.milvus_client import DeadlinedClient


class SlowLoad:
    """pymilvus's MilvusClient as a restarted Milvus Lite on a busy machine answers it."""

    def __init__(self, state: LoadState) -> None:
        self.state = state
        self.loads = 0

    def load_collection(self, name: str, timeout: float | None = None) -> None:
        self.loads += 1
        raise MilvusException(message=f"wait for loading collection timeout, collection: {name}")

    def get_load_state(self, name: str, timeout: float | None = None) -> dict[str, Any]:
        return {"state": self.state}

    def query(self, collection_name: str, **kwargs: Any) -> list[dict[str, Any]]:
        raise MilvusException(code=101, message=f"collection {collection_name} is released")


def test_a_load_still_running_is_unavailable_and_anything_else_refused() -> None:
    with pytest.raises(StoreUnavailable, match="still loading chunks"):
        DeadlinedClient(SlowLoad(LoadState.Loading), 5).load("chunks")  # type: ignore[arg-type]
    with pytest.raises(StoreRefused):
        DeadlinedClient(SlowLoad(LoadState.NotLoad), 5).load("chunks")  # type: ignore[arg-type]


def test_a_released_collection_is_loaded_once_and_a_slow_load_is_unavailable() -> None:
    client = SlowLoad(LoadState.Loading)
    with pytest.raises(StoreUnavailable):
        DeadlinedClient(client, 5).query(collection_name="chunks")  # type: ignore[arg-type]
    assert client.loads == 1


class TornRead(SlowLoad):
    """A load that fails once as Milvus Lite's did on a segment file still being written."""

    def load_collection(self, name: str, timeout: float | None = None) -> None:
        self.loads += 1
        if self.loads == 1:
            raise MilvusException(code=1, message="No data left in file")


def test_a_load_that_fails_once_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from patchstream.stores.vector import milvus_client

    monkeypatch.setattr(milvus_client, "LOAD_RETRY_S", 0.0)
    client = TornRead(LoadState.NotLoad)
    DeadlinedClient(client, 5).load("chunks")  # type: ignore[arg-type]
    assert client.loads == 2
    refusing = SlowLoad(LoadState.NotLoad)
    with pytest.raises(StoreRefused):  # a second failure is the answer
        DeadlinedClient(refusing, 5).load("chunks")  # type: ignore[arg-type]
    assert refusing.loads == 2
