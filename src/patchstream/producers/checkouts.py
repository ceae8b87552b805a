"""Where this user's indexed checkouts are: what ``patchstream index`` remembers so that an
agent's hook publishes its edits with no registry to write.

``index PATH --repo NAME --ref REF`` records ``PATH -> (NAME, REF)`` in
``$XDG_STATE_HOME/patchstream/checkouts.json`` (by default ``~/.local/state/``), mode 0600.
The Claude Code hook then publishes a file under ``PATH`` to ``NAME@REF``, and a file in a
linked git worktree of ``PATH`` to that worktree's agent workspace over ``REF``. The gateway's
registry (``local_path``), where one is configured, comes first.

The record names what the user indexed; it holds no secret. It is still read as untrusted: a
file that another user may write is refused (it would say where this user's edits go), and
each entry's names must be names an event can carry.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchstream.errors import ConfigError, ContractError
from patchstream.schemas.events import refuse_bad_names

RECORD_NAME = "checkouts.json"
MAX_CHECKOUTS = 1000  # the most recently indexed are kept
MAX_RECORD_BYTES = 1 << 20


@dataclass(frozen=True)
class Checkout:
    root: Path
    repo: str
    ref: str


def record_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patchstream" / RECORD_NAME


def read_checkouts(path: Path | None = None) -> list[Checkout]:
    """The recorded checkouts, most recent first; none when nothing was recorded."""
    path = path or record_path()
    try:
        info = path.stat()
    except FileNotFoundError:
        return []
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or info.st_uid != os.getuid():
        raise ConfigError(f"{path} says where this user's edits are published and another "
                          f"user may write it (mode {stat.S_IMODE(info.st_mode):o}); run: "
                          f"chmod 600 {path}")  # fmt: skip
    if info.st_size > MAX_RECORD_BYTES:
        raise ConfigError(f"{path} is over {MAX_RECORD_BYTES} bytes; remove it")
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); remove it") from exc
    if not isinstance(entries, list):
        raise ConfigError(f"{path} is not a list of checkouts; remove it")
    return [c for c in map(_checkout, entries) if c is not None]


def remember_checkout(root: Path, repo: str, ref: str, path: Path | None = None) -> None:
    """Records ``root`` as ``repo@ref`` (replacing what it was), written whole and atomically."""
    path = path or record_path()
    root = root.resolve()
    kept = [c for c in read_checkouts(path) if c.root != root][: MAX_CHECKOUTS - 1]
    entries = [{"root": str(c.root), "repo": c.repo, "ref": c.ref}
               for c in [Checkout(root, repo, ref), *kept]]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".checkouts-")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entries, out, indent=1)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def checkout_of(path: Path, checkouts: list[Checkout]) -> Checkout | None:
    """The recorded checkout holding ``path`` (the deepest, for a checkout inside another)."""
    holding = [c for c in checkouts if path.is_relative_to(c.root)]
    return max(holding, key=lambda c: len(c.root.parts), default=None)


def checkout_by_git_dir(common_dir: Path, checkouts: list[Checkout]) -> Checkout | None:
    """The recorded checkout whose git directory is ``common_dir`` (a worktree's)."""
    return next((c for c in checkouts if (c.root / ".git").resolve() == common_dir), None)


def _checkout(entry: object) -> Checkout | None:
    """An entry as a Checkout; None for one whose fields could not reach an event."""
    if not isinstance(entry, dict):
        return None
    root, repo, ref = entry.get("root"), entry.get("repo"), entry.get("ref")
    if not (isinstance(root, str) and isinstance(repo, str) and isinstance(ref, str)):
        return None
    try:
        refuse_bad_names(repo=repo, ref=ref)
    except ContractError:
        return None
    if not root.startswith("/") or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in root):
        return None
    return Checkout(Path(root), repo, ref)
