"""Validation of repository-relative paths carried by events."""

from __future__ import annotations

import re

from patchstream.errors import ContractError

MAX_PATH_CHARS = 1024
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def validate_repo_path(path: str) -> str:
    """Return ``path`` if it is a safe, normalized, repository-relative POSIX path.

    Rejects what could escape a checkout or touch git internals: absolute paths, ``..``,
    empty components, NUL and other control characters, lone surrogates,
    backslashes, over-long paths and any ``.git`` component.
    """
    if not path:
        raise ContractError("path is empty; send a repository-relative path such as 'src/app.py'")
    if len(path) > MAX_PATH_CHARS:
        raise ContractError(f"path is {len(path)} characters long; the limit is {MAX_PATH_CHARS}")
    if "\x00" in path:
        raise ContractError(f"path {path!r} contains a NUL byte")
    if CONTROL_CHARACTERS.search(path):
        raise ContractError(f"path {path!r} contains a control character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ContractError(f"path {path!r} is not valid UTF-8 (lone surrogate)") from exc
    if "\\" in path:
        raise ContractError(f"path {path!r} contains a backslash; use '/' as the separator")
    if path.startswith("/"):
        raise ContractError(f"path {path!r} is absolute; send it relative to the repository root")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise ContractError(f"path {path!r} has an empty, '.' or '..' component")
        if part.lower() == ".git":
            raise ContractError(f"path {path!r} points into .git, which is never indexed")
    return path
