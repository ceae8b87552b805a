"""API keys a team manages (issue #55): stored hashed, one file for both services, effective
without a restart, revoked within a second."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from patchstream.errors import ConfigError, ContractError
from patchstream.http.key_store import KeyStore, key_store_path
from patchstream.http.security import DEV_API_KEY, bearer_tenant, resolve_api_keys, unauthorized


def test_a_key_is_stored_hashed_works_at_once_and_stops_when_revoked(tmp_path: Path) -> None:
    store = KeyStore(key_store_path(tmp_path))
    ring = resolve_api_keys({"env-key": "acme"}, "127.0.0.1", "query", store)
    assert bearer_tenant(ring, "Bearer env-key") == "acme"  # the environment's map still works
    key = store.create("teama", "ann")
    assert key.encode() not in store.path.read_bytes()  # only its digest is kept
    assert (store.path.stat().st_mode & 0o777) == 0o600
    ring.recheck_s = 0.0
    assert bearer_tenant(ring, f"Bearer {key}") == "teama"  # no restart
    entry = ring.lookup(key)
    assert entry is not None and entry.name == "teama/ann" and entry.role == "person"
    assert store.revoke("ann") and not store.revoke("ann")
    assert bearer_tenant(ring, f"Bearer {key}") is None
    with pytest.raises(ContractError, match="exists"):
        store.create("teama", "bob") and store.create("teamb", "bob")
    assert ring.lookup("env-key").role == "admin"  # type: ignore[union-attr] # the operator's
    admin = store.create("teama", "ops", role="admin")
    assert ring.lookup(admin).role == "admin"  # type: ignore[union-attr]
    agent = store.create("teama", "ci-bot", role="agent")
    assert ring.lookup(agent) is not None and ring.lookup(agent).role == "agent"  # type: ignore[union-attr]
    deadline = time.monotonic() + 10
    while not any(r.last_used for r in store.records() if r.name == "ci-bot"):
        assert time.monotonic() < deadline, "the key's first use was never recorded"
        time.sleep(0.05)
    [bob] = [r for r in store.records() if r.name == "bob"]
    assert (bob.tenant, bob.last_used, bob.revoked) == ("teama", None, None)


@pytest.mark.parametrize(
    ("tenant", "name", "role"),
    [
        ("te nant", "x", "person"),
        ("t", "a\nb", "person"),
        ("t", "x", "root"),
        ("../t", "x", "agent"),
    ],
)
def test_hostile_names_and_roles_are_refused(
    tmp_path: Path, tenant: str, name: str, role: str
) -> None:
    with pytest.raises(ContractError):
        KeyStore(key_store_path(tmp_path)).create(tenant, name, role)


def test_off_loopback_a_stored_key_counts_and_the_dev_key_never_does(tmp_path: Path) -> None:
    store = KeyStore(key_store_path(tmp_path))
    with pytest.raises(ConfigError, match="keys create"):
        resolve_api_keys({}, "0.0.0.0", "gateway", store)
    key = store.create("acme", "ann")
    ring = resolve_api_keys({}, "0.0.0.0", "gateway", store)
    assert bearer_tenant(ring, f"Bearer {key}") == "acme"
    assert bearer_tenant(ring, f"Bearer {DEV_API_KEY}") is None
    local = resolve_api_keys({}, "127.0.0.1", "gateway", KeyStore(tmp_path / "none.sqlite"))
    assert bearer_tenant(local, f"Bearer {DEV_API_KEY}") == "default"


def test_a_401_says_whether_a_key_was_sent() -> None:
    assert "no API key sent" in unauthorized(None)
    assert "no API key sent" in unauthorized("Bearer ")
    assert "not recognised" in unauthorized("Bearer wrong")
