"""One server URL and a key (issue #36): from the environment or a profile only this user
can read; hostile URLs and keys refused in one line; services never read the profile."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from patchstream.config import client_profile
from patchstream.config.client_profile import as_client, checked_server_url, read_profile
from patchstream.config.settings import Settings, adjust_settings, get_settings
from patchstream.errors import ConfigError


def test_a_server_url_aims_every_client_at_it() -> None:
    aimed = as_client(Settings(server="https://ps.example.com/", api_key=SecretStr("k-1")))
    assert aimed.remote
    assert aimed.query.url == aimed.gateway.url == "https://ps.example.com"
    assert aimed.query.api_key.get_secret_value() == "k-1"
    assert aimed.gateway.api_key.get_secret_value() == "k-1"


@pytest.mark.parametrize("url", [
    "ftp://ps.example.com", "ps.example.com", "http://", "https://user:pw@ps.example.com",
    "https://ps.example.com/?key=1", "https://ps.example.com/#x", "https://ps.exa mple.com",
    "https://ps.example.com/\x00", "file:///etc/passwd",
])  # fmt: skip
def test_hostile_server_urls_are_refused(url: str) -> None:
    with pytest.raises(ConfigError):
        checked_server_url(url)


@pytest.mark.parametrize("key", ["", "two words", "k\r\nX-Injected: 1", "k" * 513])
def test_keys_that_do_not_fit_a_header_are_refused(key: str) -> None:
    with pytest.raises(ConfigError, match="printable"):
        as_client(Settings(server="https://ps.example.com", api_key=SecretStr(key)))


def _profile(home: Path, text: str, mode: int) -> Path:
    path = home / "patchstream" / "client.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_profile_others_can_read_is_refused(tmp_path: Path) -> None:
    path = _profile(tmp_path, 'server = "https://ps.example.com"\napi_key = "k"\n', 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_profile(path)
    path.chmod(0o600)
    assert read_profile(path) == ("https://ps.example.com", "k")


@pytest.mark.parametrize("text", ["server = 1\n", 'srv = "x"\n', "server = \n", "\xff"])
def test_a_malformed_profile_is_refused_with_its_path(tmp_path: Path, text: str) -> None:
    path = _profile(tmp_path, text, 0o600)
    with pytest.raises(ConfigError, match=r"client\.toml"):
        read_profile(path)


def test_only_client_commands_read_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A developer's profile must not turn ``up``, a worker or a service into a client."""
    _profile(tmp_path, 'server = "https://ps.example.com"\napi_key = "k-2"\n', 0o600)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for name in ("PATCHSTREAM_SERVER", "PATCHSTREAM_API_KEY", "PATCHSTREAM_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    adjust_settings("client", None)
    try:
        assert not get_settings().remote and not get_settings().server
        client_profile.use_client_profile()
        aimed = get_settings()
        assert aimed.remote and aimed.query.url == "https://ps.example.com"
        assert aimed.gateway.api_key.get_secret_value() == "k-2"
        monkeypatch.setenv("PATCHSTREAM_SERVER", "https://other.example.com")
        get_settings.cache_clear()
        assert get_settings().gateway.url == "https://other.example.com"  # the environment wins
    finally:
        get_settings.cache_clear()
