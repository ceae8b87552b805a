"""What every git call shares, whoever makes it (the gateway's mirrors, the parse stage's blob
reads): the refusal type, object ids checked as object ids, and the environment git runs in."""

from __future__ import annotations

import os
import re

from patchstream.errors import ContractError

_OBJECT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


class UnsafeGitInput(ContractError):  # noqa: N818 - a refusal, named for what was refused
    """A value bound for git (object id, ref name, clone URL) was refused before git ran."""


def validate_object_id(value: object, field: str = "object id") -> str:
    """A full SHA-1 or SHA-256 hex object id, or UnsafeGitInput."""
    if not isinstance(value, str) or not _OBJECT_ID.fullmatch(value):
        shown = repr(value)[:80]
        raise UnsafeGitInput(f"{field} {shown} is not a 40- or 64-digit hex object id", "bad_sha")
    return value


def git_environment() -> dict[str, str]:
    """The only environment git gets: no inherited secrets, no system or user config, no
    prompts, and only the transports the gateway allows."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "LANG": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_ALLOW_PROTOCOL": "https:http:ssh:git:file",
    }
