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

from dataclasses import dataclass
from pathlib import Path

from patchstream.config import user_records
from patchstream.errors import ContractError
from patchstream.schemas.events import refuse_bad_names

RECORD_NAME = "checkouts.json"
MAX_CHECKOUTS = 1000  # the most recently indexed are kept


@dataclass(frozen=True)
class Checkout:
    root: Path
    repo: str
    ref: str


def record_path() -> Path:
    return user_records.record_path(RECORD_NAME)


def read_checkouts(path: Path | None = None) -> list[Checkout]:
    """The recorded checkouts, most recent first; none when nothing was recorded."""
    entries = user_records.read_record(path or record_path(),
                                       "where this user's edits are published")  # fmt: skip
    return [c for c in map(_checkout, entries) if c is not None]


def remember_checkout(root: Path, repo: str, ref: str, path: Path | None = None) -> None:
    """Records ``root`` as ``repo@ref`` (replacing what it was)."""
    path = path or record_path()
    root = root.resolve()
    kept = [c for c in read_checkouts(path) if c.root != root][: MAX_CHECKOUTS - 1]
    user_records.write_record(path, [{"root": str(c.root), "repo": c.repo, "ref": c.ref}
                                     for c in [Checkout(root, repo, ref), *kept]])  # fmt: skip


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
    if not (user_records.clean_absolute_path(root) and isinstance(repo, str)
            and isinstance(ref, str)):  # fmt: skip
        return None
    try:
        refuse_bad_names(repo=repo, ref=ref)
    except ContractError:
        return None
    return Checkout(Path(str(root)), repo, ref)
