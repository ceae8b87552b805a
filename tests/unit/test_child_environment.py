"""What the stack's children inherit: malloc arenas capped at two unless the caller's
environment says otherwise (bench/pipeline.py measured the summed peak at scipy 3% lower)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstream.config.settings import EmbeddedSettings, Settings
from patchstream.embedded.supervisor import Supervisor


def test_children_cap_malloc_arenas_unless_told_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = Supervisor(Settings(embedded=EmbeddedSettings(data_dir=str(tmp_path))))
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert supervisor.environment()["MALLOC_ARENA_MAX"] == "2"
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert supervisor.environment()["MALLOC_ARENA_MAX"] == "8"
