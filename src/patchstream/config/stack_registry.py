"""Which embedded stacks run on this machine, so a client in any directory finds its own.

The data dir defaults to ``.patchstream`` under the directory ``up`` was started in. A
client reads three things there: Milvus's socket, FalkorDB's password and the outbox. So
``patchstream index .`` run from inside a repository, not where ``up`` runs, waited forever
for a Milvus it looked for in the wrong place (and would have written an outbox no stack
replays). ``up`` now records its data dir in ``$XDG_STATE_HOME/patchstream/stacks.json``,
and a client command whose data dir is left unset, and whose working directory holds no
running stack, uses the most recently started stack that still runs.

"Still runs" is the data dir's lock (``embedded.data_dir_lock``: ``up`` holds an ``flock`` on
``<data dir>/up.lock``, which the kernel drops when it dies). The record decides where a
client writes, so it is read as untrusted: a file another user may write is refused, and an
entry must be an absolute path, owned by this user, with no control characters.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

from patchstream.config import user_records
from patchstream.config.settings import Settings, adjust_settings, derived
from patchstream.errors import ConfigError

LOCK_NAME = "up.lock"
RECORD_NAME = "stacks.json"
MAX_STACKS = 20

log = logging.getLogger(__name__)


def holder(data_dir: Path) -> int | None:
    """The pid of the ``up`` that holds ``data_dir`` now; None when none does (or unknown).
    A shared lock is refused while an exclusive one is held, and leaves nothing behind."""
    try:
        fd = os.open(data_dir / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.read(fd, 32).decode(errors="replace").strip()
            return int(pid) if pid.isdigit() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def record_path() -> Path:
    return user_records.record_path(RECORD_NAME)


def recorded_stacks(path: Path | None = None) -> list[Path]:
    """Recorded data dirs, most recently started first (live or not)."""
    entries = user_records.read_record(path or record_path(), "where this user's clients write")
    return [Path(str(e)) for e in entries if user_records.clean_absolute_path(e)]


def record_stack(data_dir: Path, path: Path | None = None) -> None:
    """Records ``data_dir`` as the most recently started stack; entries whose stack no longer
    runs are dropped."""
    path = path or record_path()
    data_dir = data_dir.resolve()
    kept: list[Path] = []
    with contextlib.suppress(ConfigError):  # a bad record is replaced, not trusted
        kept = [d for d in recorded_stacks(path) if d != data_dir and holder(d) is not None]
    user_records.write_record(path, [str(data_dir), *map(str, kept)][:MAX_STACKS])


def running_data_dir(path: Path | None = None) -> Path | None:
    """The data dir of the most recently started stack that still runs, owned by this user;
    None when none does."""
    for data_dir in recorded_stacks(path):
        try:
            owned = data_dir.stat().st_uid == os.getuid()
        except OSError:
            continue
        if owned and holder(data_dir) is not None:
            return data_dir
    return None


def follow_the_running_stack() -> None:
    """From now on, a data dir left unset is the running stack's (``client_data_dir``): the
    CLI calls this for client and operator commands, never for ``up`` or its children."""
    adjust_settings("stack", following_the_running_stack)


def following_the_running_stack(settings: Settings) -> Settings:
    """``settings`` with a data dir left unset replaced by the running stack's (a client of
    a server has no data dir to follow)."""
    if settings.remote:
        return settings
    embedded = settings.embedded
    data_dir = client_data_dir(embedded.data_dir, "data_dir" in embedded.model_fields_set)
    settings.embedded = derived(embedded, data_dir=data_dir)
    return settings


def client_data_dir(data_dir: str, explicitly_set: bool) -> str:
    """The data dir a client uses: the one it was given, else the working directory's when a
    stack runs there, else the running stack's, else the default as it is."""
    if explicitly_set or holder(Path(data_dir)) is not None:
        return data_dir
    try:
        running = running_data_dir()
    except ConfigError as exc:  # said, and not followed
        log.warning("event=stack_record_refused reason=%r", str(exc))
        return data_dir
    return str(running) if running is not None else data_dir
