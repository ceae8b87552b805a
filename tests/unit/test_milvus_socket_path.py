"""Where the embedded Milvus's socket lives: in the data dir, or (a deep data dir) in this
user's private runtime directory, under a name the same at every start."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from patchstream.config.stack_addresses import SOCKET_PATH_MAX, milvus_socket_path
from patchstream.errors import ConfigError


def test_a_short_data_dir_holds_the_socket(tmp_path: Path) -> None:
    assert milvus_socket_path(tmp_path) == tmp_path.resolve() / "milvus.sock"


def test_a_deep_data_dir_gets_a_stable_private_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="rt"))  # short, as /run/user/UID is
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    other = tmp_path / ("d" * 60) / ("f" * 60)
    path = milvus_socket_path(deep)
    assert len(os.fsencode(path)) <= SOCKET_PATH_MAX
    assert path.parent == runtime / "patchstream"
    assert path.parent.stat().st_mode & 0o077 == 0
    assert milvus_socket_path(deep) == path  # clients that outlive a restart find it again
    assert milvus_socket_path(other) != path
    shutil.rmtree(runtime)


def test_a_runtime_dir_others_can_enter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run"
    (runtime / "patchstream").mkdir(parents=True)
    (runtime / "patchstream").chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    with pytest.raises(ConfigError, match="0700"):
        milvus_socket_path(tmp_path / ("d" * 120))


def test_a_terminal_beside_up_reaches_its_milvus_with_no_setting(tmp_path: Path) -> None:
    """Issue found by `make run`: the CLI read Milvus on a TCP port `up` no longer opens."""
    from patchstream.config.settings import EmbeddedSettings, Settings, VectorSettings
    from patchstream.stores.factory import milvus_uri

    embedded = EmbeddedSettings(data_dir=str(tmp_path), milvus_port=19999)
    assert milvus_uri(Settings(embedded=embedded)) == f"unix:{tmp_path.resolve()}/milvus.sock"
    over_tcp = embedded.model_copy(update={"milvus_socket": False})
    assert milvus_uri(Settings(embedded=over_tcp)) == "http://127.0.0.1:19999"
    named = Settings(embedded=embedded, vector=VectorSettings(milvus_uri="http://milvus:19530"))
    assert milvus_uri(named) == "http://milvus:19530"  # a deployment's own Milvus wins
