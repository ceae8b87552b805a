"""Validation of repository-relative paths carried by events."""

from __future__ import annotations

from patchstream.errors import ContractError


def validate_repo_path(path: str) -> str:
    """Return ``path`` if it is a safe, normalized, repository-relative POSIX path.

    Rejects what could escape a checkout or touch git internals: absolute paths, ``..``,
    empty components, NUL bytes, backslashes and any ``.git`` component.
    """
    if not path:
        raise ContractError("path is empty; send a repository-relative path such as 'src/app.py'")
    if "\x00" in path:
        raise ContractError(f"path {path!r} contains a NUL byte")
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
