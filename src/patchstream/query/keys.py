"""The query service's keys: the configured map and the stack's key store, one ring."""

from __future__ import annotations

from pathlib import Path

from patchstream.config.settings import Settings
from patchstream.http.key_store import KeyRing, KeyStore, key_store_path
from patchstream.http.security import resolve_api_keys


def query_keys(settings: Settings, host: str | None = None) -> KeyRing:
    store = KeyStore(key_store_path(Path(settings.embedded.data_dir)))
    return resolve_api_keys(settings.query.api_keys, host or settings.query.host, "query",
                            store, tuple(settings.query.agent_keys))  # fmt: skip
