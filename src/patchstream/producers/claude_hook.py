"""``patchstream hook claude-code``: Claude Code's PostToolUse hook for Write/Edit/MultiEdit.

It must never block or fail the agent's tool call: every error is logged to stderr and the
process exits 0, within a few seconds at most.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from patchstream.client import PatchClient
from patchstream.producers.registry import load_registry
from patchstream.settings import Settings

WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})


def _repo_for(file_path: Path, settings: Settings) -> tuple[str, Path] | None:
    """(repository name, checkout root) for a file: the registry first, else git's toplevel."""
    registered = load_registry(settings.gateway.config).find_by_path(file_path)
    if registered is not None and registered.local_path:
        return registered.name, Path(registered.local_path)
    try:
        top = subprocess.run(
            ["git", "-C", str(file_path.parent), "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, timeout=2, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return (Path(top).name, Path(top)) if top else None


def handle(payload: dict[str, Any], settings: Settings) -> dict[str, Any] | None:
    if payload.get("tool_name") not in WRITE_TOOLS:
        return None
    tool_input = payload.get("tool_input") or {}
    raw = tool_input.get("file_path")
    if not raw:
        return None
    file_path = Path(raw)
    if not file_path.is_absolute():
        file_path = Path(payload.get("cwd") or ".") / file_path
    file_path = file_path.resolve()
    found = _repo_for(file_path, settings)
    if found is None:
        return None
    repo, root = found
    relative = file_path.relative_to(root.resolve()).as_posix()
    if not settings.gateway.url:
        raise RuntimeError("PATCHSTREAM_GATEWAY__URL is not set; the hook has nowhere to send")
    with PatchClient(settings.gateway.url, settings.gateway.api_key.get_secret_value(),
                     timeout_s=3.0) as client:  # fmt: skip
        if not file_path.exists():
            return client.delete_file(repo, relative, session_id=payload.get("session_id"))
        content = file_path.read_bytes().decode("utf-8", errors="replace")
        return client.write_file(repo, relative, content, session_id=payload.get("session_id"),
                                 actor="claude-code")  # fmt: skip


def main(stdin: str, settings: Settings) -> int:
    try:
        result = handle(json.loads(stdin or "{}"), settings)
        if result is not None:
            print(f"patchstream: published {len(result['event_ids'])} write(s)", file=sys.stderr)
    except Exception as exc:  # never fail the agent's tool call
        print(f"patchstream hook: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0
