"""Registered repositories and API keys, from a TOML file (``PATCHSTREAM_GATEWAY__CONFIG``).

[[repos]]
tenant = "acme"
name = "shop"
clone_url = "https://github.com/acme/shop.git"   # or file:///srv/git/shop.git
default_branch = "main"
webhook_secret = "..."                            # or webhook_secret_env = "SHOP_SECRET"
local_path = "/home/dev/shop"                     # optional: where agents edit it

[api_keys]
"key-for-acme-agents" = "acme"
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from pydantic import BaseModel, Field, SecretStr, model_validator

from patchstream.errors import ConfigError


class RegisteredRepo(BaseModel):
    tenant: str
    name: str
    clone_url: str
    default_branch: str = "main"
    webhook_secret: SecretStr = SecretStr("")
    webhook_secret_env: str | None = None
    local_path: str | None = None

    @model_validator(mode="after")
    def _secret_from_env(self) -> RegisteredRepo:
        if self.webhook_secret_env:
            self.webhook_secret = SecretStr(os.environ.get(self.webhook_secret_env, ""))
        return self


class Registry(BaseModel):
    repos: list[RegisteredRepo] = Field(default_factory=list)
    api_keys: dict[str, str] = Field(default_factory=dict)

    def check(self) -> Registry:
        """Refuse to start with a repository whose webhook secret is empty (never fail open)."""
        for repo in self.repos:
            if not repo.webhook_secret.get_secret_value():
                raise ConfigError(
                    f"repository {repo.tenant}/{repo.name} has an empty webhook secret; set "
                    "webhook_secret or webhook_secret_env in the gateway config"
                )
        return self

    def find_by_url(self, *urls: str) -> RegisteredRepo | None:
        wanted = {u.rstrip("/").removesuffix(".git") for u in urls if u}
        for repo in self.repos:
            if repo.clone_url.rstrip("/").removesuffix(".git") in wanted:
                return repo
        return None

    def find_by_name(self, tenant: str, name: str) -> RegisteredRepo | None:
        return next((r for r in self.repos if r.tenant == tenant and r.name == name), None)

    def find_by_path(self, path: Path) -> RegisteredRepo | None:
        """The registered repository whose local checkout contains ``path``."""
        best: RegisteredRepo | None = None
        for repo in self.repos:
            inside = bool(repo.local_path) and path.is_relative_to(Path(repo.local_path or "/"))
            if inside and (best is None or len(repo.local_path or "") > len(best.local_path or "")):
                best = repo
        return best

    def find_by_git_dir(self, common_dir: Path) -> RegisteredRepo | None:
        """The registered repository whose checkout's git directory is ``common_dir`` (what
        ``git rev-parse --git-common-dir`` names from any of its worktrees)."""
        for repo in self.repos:
            if repo.local_path and (Path(repo.local_path) / ".git").resolve() == common_dir:
                return repo
        return None


def load_registry(path: str | None) -> Registry:
    if not path:
        return Registry()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read gateway config {path}: {exc}") from exc
    return Registry.model_validate(data).check()
