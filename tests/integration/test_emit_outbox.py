"""``patchstream emit`` without a gateway publishes to the broker itself: what it
acknowledges is on disk first, as what ``index`` and the gateway acknowledge (the embedded
broker keeps its log in memory; ``up`` replays the outbox into a restarted one)."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchstream.bus.topics import ensure_topics
from patchstream.cli.main import cli
from patchstream.config.settings import EmbeddedSettings, KafkaSettings, Settings, get_settings
from patchstream.embedded.services import Service
from patchstream.producers.outbox import Outbox, outbox_path


def test_an_emitted_write_is_in_the_outbox_once_acknowledged(
    tansu_service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = KafkaSettings(bootstrap=tansu_service.url, topic_prefix=f"e{uuid.uuid4().hex[:6]}.")
    asyncio.run(ensure_topics(kafka))
    monkeypatch.setenv("PATCHSTREAM_KAFKA", kafka.model_dump_json())
    monkeypatch.setenv("PATCHSTREAM_EMBEDDED__DATA_DIR", str(tmp_path))
    monkeypatch.delenv("PATCHSTREAM_GATEWAY__URL", raising=False)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli, ["emit", "--repo", "demo", "--path", "pkg/a.py",
                                          "--stdin"], input="x = 1\n")  # fmt: skip
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    receipt = json.loads(result.output)
    settings = Settings(embedded=EmbeddedSettings(data_dir=str(tmp_path)))
    outbox = Outbox(outbox_path(settings))
    try:
        [entry] = outbox.pending()
    finally:
        outbox.close()
    assert (entry.key, entry.path, entry.version) == (
        receipt["key"].encode(), "pkg/a.py", receipt["version"])  # fmt: skip
