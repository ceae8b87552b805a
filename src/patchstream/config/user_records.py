"""This user's small JSON records under ``$XDG_STATE_HOME/patchstream/`` (by default
``~/.local/state/``): the checkouts ``index`` recorded, the stacks ``up`` started.

They hold no secret, but each decides where this user's writes go, so each is read as
untrusted: a file another user may write (or own) is refused with the command that fixes
it, as is one too big or not a JSON list. Writes are whole and atomic, mode 0600.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from patchstream.errors import ConfigError

MAX_RECORD_BYTES = 1 << 20


def record_path(name: str) -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patchstream" / name


def read_record(path: Path, decides: str) -> list[object]:
    """The record's entries; none when there is no record. ``decides`` says what it decides,
    for the refusal of a record another user may write."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return []
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or info.st_uid != os.getuid():
        raise ConfigError(f"{path} says {decides} and another user may write it (mode "
                          f"{stat.S_IMODE(info.st_mode):o}); run: chmod 600 {path}")  # fmt: skip
    if info.st_size > MAX_RECORD_BYTES:
        raise ConfigError(f"{path} is over {MAX_RECORD_BYTES} bytes; remove it")
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); remove it") from exc
    if not isinstance(entries, list):
        raise ConfigError(f"{path} is not a JSON list; remove it")
    return entries


def write_record(path: Path, entries: Sequence[object]) -> None:
    """Replaces the record with ``entries``, whole and atomically (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entries, out, indent=1)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def clean_absolute_path(entry: object) -> bool:
    """An absolute path with no control characters (what a record's path entry must be)."""
    return (isinstance(entry, str) and entry.startswith("/")
            and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in entry))  # fmt: skip
