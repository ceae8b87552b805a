"""A data dir whose outbox kept content the index now withholds (a private key an older
``index`` took in) is purged of it at the first start under the rule (issue #53)."""

from __future__ import annotations

from pathlib import Path

from patchstream.producers.outbox import Outbox
from patchstream.producers.outbox_purge import purge_withheld
from patchstream.schemas.events import PatchEvent
from patchstream.streams.codec import decode_event

# Built, so that this file is not itself a secret to the rule it tests.
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----"
KEY = f"{PEM}\nMIIEowIBAAKCAQEAsecretsecretsecret\n-----END RSA PRIVATE KEY-----\n"


def _event(path: str, content: str, version: int) -> PatchEvent:
    return PatchEvent(tenant="default", repo="requests", path=path, op="upsert", content=content,
                      version=version, source="snapshot")  # fmt: skip


def test_withheld_content_is_rewritten_as_a_flagged_name_and_scrubbed_from_disk(
    tmp_path: Path,
) -> None:
    path = tmp_path / "outbox.sqlite"
    outbox = Outbox(path)
    outbox.append([
        _event("tests/certs/server.key", KEY, 10),
        _event("tests/test_tls.py", f'PEM = """{KEY}"""\n', 11),
        _event("src/app.py", "def app():\n    return 1\n", 12),
        _event("data/huge.py", "x = 1\n" * 1000, 13),
    ])  # fmt: skip
    ids = [entry.id for entry in outbox.pending()]
    outbox.mark_applied(outbox.pending())  # what the stores held long ago
    assert b"PRIVATE KEY" in path.read_bytes() + Path(f"{path}-wal").read_bytes()

    rewritten = purge_withheld(outbox, max_bytes=4096)
    assert sorted(rewritten) == ["data/huge.py", "tests/certs/server.key", "tests/test_tls.py"]
    on_disk = path.read_bytes() + Path(f"{path}-wal").read_bytes()
    assert b"PRIVATE KEY" not in on_disk and b"secretsecret" not in on_disk
    entries = {e.path: e for e in outbox.pending()}  # owed again: the replay publishes them
    assert set(entries) == set(rewritten) and sorted(e.id for e in entries.values()) == [
        ids[0], ids[1], ids[3]]  # fmt: skip
    key = decode_event(entries["tests/certs/server.key"].value)
    assert key.content is None and key.withheld is not None
    assert (key.withheld.reason, key.withheld.size) == ("secret", len(KEY))
    assert key.version > 10 and entries["tests/certs/server.key"].version == key.version
    huge = decode_event(entries["data/huge.py"].value)
    assert huge.withheld is not None and huge.withheld.reason == "too_large"
    assert purge_withheld(outbox, max_bytes=4096) == []  # once per rule version
    outbox.close()
