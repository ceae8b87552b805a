"""The Milvus client as the stores use it: a deadline on every call, errors typed at the
boundary (``StoreUnavailable`` to retry, ``StoreRefused`` to dead-letter), and expression
literals that Milvus Lite's parser cannot misread."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

import grpc
from pymilvus import MilvusClient, MilvusException, MilvusUnavailableException
from pymilvus.client.types import LoadState, Status

from patchstream.errors import ContractError, StoreError, StoreRefused, StoreUnavailable

# Milvus Lite's expression parser takes printable text in double quotes with \\ and \" escaped;
# control characters, lone surrogates and other escapes are refused rather than emitted.
_UNSAFE_LITERAL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def lit(value: str) -> str:
    """A Milvus expression string literal; ContractError for text its parser cannot take."""
    if _UNSAFE_LITERAL.search(value):
        raise ContractError("a filter value holds control characters or lone surrogates",
                            code="bad_literal")  # fmt: skip
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def lit_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(lit(v) for v in values) + "]"


# pymilvus pings every 10 s even on an idle channel; Milvus Lite's gRPC server allows one
# ping per 5 minutes without data and answers more with GOAWAY "too_many_pings", after which
# the shared channel's recovery failed (CI, a store connecting after 20 idle minutes). The
# deadline on every call (below) already bounds a dead connection, so pings stay rare.
#
# A refused connection is tried again within 0.1-0.5 s, not gRPC's 1-120 s: a Unix socket
# whose accept queue is full (a client flooding it) refuses at once, where TCP waits.
RECONNECT_OPTIONS = {
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 500,
}
CHANNEL_OPTIONS = {
    "grpc.keepalive_time_ms": 300_000,
    "grpc.keepalive_permit_without_calls": 0,
    **RECONNECT_OPTIONS,
}


def connect(uri: str, token: str, timeout_s: float) -> MilvusClient:
    """A client on its own channel: one store's broken channel never stalls another's. A
    refused connection is tried again until ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    pause = 0.05
    while True:
        try:
            return MilvusClient(uri=uri, token=token, timeout=timeout_s, dedicated=True,
                                grpc_options=CHANNEL_OPTIONS)  # fmt: skip
        except MilvusException as exc:
            if exc.code != Status.CONNECT_FAILED or time.monotonic() + pause >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


class DeadlinedClient:
    """The client with a deadline on every call that does not name its own (a Milvus that
    stops answering fails the call instead of hanging the sink or the query service), and
    its errors typed at the boundary: ``StoreUnavailable`` or ``StoreRefused``."""

    def __init__(self, client: MilvusClient, timeout_s: float) -> None:
        self._client = client
        self._timeout_s = timeout_s

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute) or name in ("close", "prepare_index_params"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", self._timeout_s)
            try:
                try:
                    return attribute(*args, **kwargs)
                except MilvusException as exc:
                    # A restarted Milvus holds every collection released: load it, once.
                    collection = kwargs.get("collection_name", args[0] if args else None)
                    if exc.code != NOT_LOADED or not isinstance(collection, str):
                        raise
                    self.load(collection)
                    return attribute(*args, **kwargs)
            except (MilvusException, grpc.RpcError) as exc:
                raise milvus_error(f"{name} failed", exc) from exc

        return call

    def load(self, collection: str) -> None:
        """Loads ``collection``. A load still running when the client's wait for it ends (a
        restarted Milvus Lite on a busy machine) is a store not answering yet, retried like an
        outage, not a refusal: the load state says which, never the message."""
        for attempt in range(2):
            try:
                self._client.load_collection(collection, timeout=self._timeout_s)
                return
            except (MilvusException, grpc.RpcError) as exc:
                try:
                    state = self._client.get_load_state(collection, timeout=self._timeout_s)
                except (MilvusException, grpc.RpcError):
                    state = {}
                if state.get("state") == LoadState.Loading:
                    raise StoreUnavailable(f"Milvus is still loading {collection} ({exc})",
                                           store="milvus") from exc  # fmt: skip
                if attempt == 1 or not isinstance(exc, MilvusException):
                    raise milvus_error(f"load_collection {collection} failed", exc) from exc
            # Milvus Lite read a segment file a flush had not finished writing ("No data left
            # in file", a CI run's load right after a release): once more, a moment later.
            time.sleep(LOAD_RETRY_S)


LOAD_RETRY_S = 0.5
NOT_LOADED = 101  # "collection ... is in state 'released'; call load()"
_UNREACHABLE_GRPC = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


def milvus_error(what: str, exc: Exception) -> StoreError:
    """Typed at the boundary: unreachable (retry for as long as it takes) or refused."""
    unreachable = (
        isinstance(exc, MilvusUnavailableException)
        or (isinstance(exc, MilvusException) and exc.code == Status.CONNECT_FAILED)
        or (isinstance(exc, grpc.RpcError) and exc.code() in _UNREACHABLE_GRPC)
    )
    if unreachable:
        return StoreUnavailable(f"Milvus {what}: not answering ({exc})", store="milvus")
    return StoreRefused(f"Milvus {what}: {exc}")
