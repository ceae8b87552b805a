"""One server URL and a key: what a client of a shared patchstream needs, nothing more.

``PATCHSTREAM_SERVER`` and ``PATCHSTREAM_API_KEY``, or else the profile file
(``$XDG_CONFIG_HOME/patchstream/client.toml``, by default ``~/.config/patchstream/``)::

    server = "https://patchstream.example.com"
    api_key = "..."

make every command a client of that server: queries, workspaces, runs, sessions, memory and
the MCP server ask its query service, ``emit``, hooks and ``index`` write through the same
URL (the query service forwards the gateway's routes), all with that key. The file holds a
secret, so one that another user may read is refused, as ssh refuses such a key.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import SecretStr

from patchstream.config.settings import Settings, adjust_settings
from patchstream.errors import ConfigError

PROFILE_NAME = "client.toml"
_KEY = re.compile(r"[\x21-\x7e]{1,512}")  # printable, no spaces: it goes in a header


def use_client_profile() -> None:
    """From now on, settings name the server of ``PATCHSTREAM_SERVER`` or the profile: the CLI
    calls this for its client commands only, never for a service, a worker or an operator
    command that opens stores (a developer's profile must not turn ``up`` into a client)."""
    adjust_settings("client", as_client)


def profile_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "patchstream" / PROFILE_NAME


def read_profile(path: Path) -> tuple[str, str | None]:
    """The profile's server URL and key; a file others may read or a bad field is refused."""
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{path} holds an API key and is readable by others (mode "
                          f"{stat.S_IMODE(info.st_mode):o}); run: chmod 600 {path}")  # fmt: skip
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    unknown = set(document) - {"server", "api_key"}
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)} (server, api_key)")
    server, key = document.get("server", ""), document.get("api_key")
    if not isinstance(server, str) or not (key is None or isinstance(key, str)):
        raise ConfigError(f"{path}: server and api_key are strings")
    return server, key


def checked_server_url(url: str) -> str:
    """An http(s) URL with a host and nothing that does not belong in one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"server {url!r} must be an http:// or https:// URL with a host")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError("the server URL carries no credentials, query or fragment; "
                          "give the key as PATCHSTREAM_API_KEY or in the profile")  # fmt: skip
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise ConfigError("the server URL has spaces or control characters")
    return url.rstrip("/")


def as_client(settings: Settings) -> Settings:
    """``settings`` aimed at the server named by the environment or the profile; as they are
    when neither names one."""
    server = settings.server
    key = settings.api_key.get_secret_value() if settings.api_key is not None else None
    if not server:
        path = profile_path()
        if not path.is_file():
            return settings
        server, profile_key = read_profile(path)
        key = profile_key if key is None else key
        if not server:
            return settings
    url = checked_server_url(server)
    if key is not None and not _KEY.fullmatch(key):
        raise ConfigError("the API key must be 1-512 printable characters without spaces")
    secret = SecretStr(key) if key is not None else settings.query.api_key
    return settings.model_copy(update={
        "server": url,
        "remote": True,
        "query": settings.query.model_copy(update={"url": url, "api_key": secret}),
        "gateway": settings.gateway.model_copy(update={"url": url, "api_key": secret}),
    })  # fmt: skip
