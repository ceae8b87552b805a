"""Freshness counts acknowledged writes a tier lacks, read from the outbox (query/owed.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from patchstream.config.settings import EmbeddedSettings, Settings
from patchstream.embedded import outbox_relay
from patchstream.embedded.outbox_relay import OutboxTender
from patchstream.producers.outbox import Outbox, outbox_path
from patchstream.query.owed import UnmarkedEntry, owed_since, unmarked_entries, unverified_since
from patchstream.schemas.events import PatchEvent


def _event(path: str, ref: str = "main", workspace: str | None = None) -> PatchEvent:
    return PatchEvent(tenant="acme", repo="shop", ref=ref, workspace=workspace, path=path,
                      op="delete", version=time.time_ns(), source="agent")  # fmt: skip


def test_the_oldest_unmarked_entries_of_one_repository_are_read_without_writing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "outbox.sqlite"
    assert unmarked_entries(path, "acme", "shop") == [] and not path.exists()
    outbox = Outbox(path)
    try:
        applied = outbox.append([
            _event("a.py"), _event("b.py"), _event("c.py", workspace="agent-1"),
            _event("d.py").model_copy(update={"repo": "elsewhere"})])[1]  # fmt: skip
        outbox.mark_applied(e for e in outbox.pending() if e.id == applied)
    finally:
        outbox.close()
    found = unmarked_entries(path, "acme", "shop")
    assert [(e.ref, e.path) for e in found] == [("main", "a.py"), ("main~agent-1", "c.py")]
    assert unmarked_entries(path, "other-tenant", "shop") == []
    assert unmarked_entries(path, "acme", "shop", limit=1)[0].path == "a.py"


def test_each_tier_is_as_late_as_the_oldest_write_it_lacks() -> None:
    entries = [UnmarkedEntry("main", "a.py", 10, 100.0), UnmarkedEntry("main", "b.py", 20, 200.0)]
    holds_all = {"a.py": 10, "b.py": 25}
    lacks_b = {"a.py": 11}
    older_a = {"a.py": 9, "b.py": 20}

    def down(ref: str, path: str) -> int | None:
        raise ConnectionError("restarting")

    since = owed_since(entries, {
        "graph": lambda ref, path: holds_all.get(path),
        "vector": lambda ref, path: lacks_b.get(path),
        "older": lambda ref, path: older_a.get(path),
        "down": down})  # fmt: skip
    assert since == {"graph": None, "vector": 200.0, "older": 100.0, "down": 100.0}


def test_while_a_replay_waits_every_kept_write_of_the_repository_is_unverified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor marks the outbox while its replay after a restart waits (the stores
    may have lost anything it keeps); freshness then counts the repository's oldest kept
    write as owed, and stops once the replay has run."""
    settings = Settings(embedded=EmbeddedSettings(data_dir=str(tmp_path)))
    outbox = Outbox(outbox_path(settings))
    try:
        outbox.append([_event("a.py")])
        outbox.mark_applied(outbox.pending())  # applied: no longer owed by itself
        outbox.append([_event("b.py").model_copy(update={"repo": "elsewhere"})])
        [kept] = [e for e in outbox.pending(retained=True) if e.repo == "shop"]
    finally:
        outbox.close()
    path = outbox_path(settings)
    assert unverified_since(path, "acme", "shop") is None  # no replay waits
    tender = OutboxTender(settings)
    tender.replay_due = True
    replays: list[bool] = []

    def stores_down() -> None:
        raise ConnectionError("milvus is starting")

    monkeypatch.setattr(tender, "_opened", stores_down)
    tender.tend(time.time())  # the stores do not answer: the replay still waits
    assert tender.replay_due
    assert unverified_since(path, "acme", "shop") == pytest.approx(kept.created_at)
    assert unverified_since(path, "acme", "nothing-kept") is None
    monkeypatch.setattr(tender, "_opened", lambda: (None, None))
    monkeypatch.setattr(tender, "audit_vectors", lambda now: False)
    monkeypatch.setattr(outbox_relay, "replay_and_prune",
                        lambda *args, **kw: replays.append(kw["replay"]) or (0, 0))  # fmt: skip
    tender.tend(time.time())
    assert replays == [True] and not tender.replay_due
    assert unverified_since(path, "acme", "shop") is None  # checked: vouched for again
