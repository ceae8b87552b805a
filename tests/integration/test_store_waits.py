"""A store that does not answer yet is a typed, waitable error, and ``index`` waits for it
(the restart soak's round 14: Milvus restarting made an index fail at once with an untyped
``MilvusException``)."""

from __future__ import annotations

import asyncio

import pytest

from patchstream.embedded.services import free_port
from patchstream.embedders.hashing import HashingEmbedder
from patchstream.errors import StoreUnavailable
from patchstream.indexing.run import _opened
from patchstream.stores.vector.milvus import MilvusVectorStore


def test_milvus_not_listening_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable) as raised:
        MilvusVectorStore(f"http://127.0.0.1:{free_port()}", HashingEmbedder(), timeout_s=2)
    assert raised.value.store == "milvus"


def test_index_waits_for_a_store_that_comes_back() -> None:
    attempts: list[int] = []

    def open_store() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise StoreUnavailable("Milvus connect failed: not answering", store="milvus")
        return "store"

    assert asyncio.run(_opened(open_store, wait_s=30)) == "store"
    assert len(attempts) == 3
    with pytest.raises(StoreUnavailable):
        asyncio.run(_opened(lambda: (_ for _ in ()).throw(StoreUnavailable("x", store="m")), 0))
