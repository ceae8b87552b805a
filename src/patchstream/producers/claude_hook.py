"""``patchstream hook claude-code``: Claude Code's PostToolUse hook for Write/Edit/MultiEdit
(and, with the query service configured, Bash: its output goes to the session's working state).

It must never block or fail the agent's tool call: every error is logged to stderr and the
process exits 0, within a few seconds at most. It publishes only files of checkouts this user
indexed (``producers.checkouts``) or the gateway config registers (``local_path``), to the
configured gateway or else the one ``up`` serves here, and skips, saying so on stderr, what
git ignores. A file over the size cap, binary or a secret (``parsing.indexable``, the rule of
every entry point) is published as its name only, flagged, and said on stderr.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchstream.client import PatchClient
from patchstream.config.settings import Settings, client_host
from patchstream.parsing.indexable import judge_file
from patchstream.producers.checkouts import checkout_by_git_dir, checkout_of, read_checkouts
from patchstream.producers.claude_session import (
    SHELL_TOOLS,
    query_configured,
    record_diff,
    record_shell_output,
)
from patchstream.producers.registry import load_registry

WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})


class Skipped(Exception):  # noqa: N818 - a decision, reported on stderr
    """The hook chose not to publish a file; the message says why."""


@dataclass(frozen=True)
class Target:
    """Where the hook publishes a file: ``repo@ref`` (in ``workspace`` when it is set),
    with paths relative to ``root``."""

    repo: str
    root: Path
    ref: str
    workspace: str | None = None


def target_of(file_path: Path, settings: Settings) -> Target:
    """Only files of known checkouts are published: the gateway registry's (``local_path``),
    else those ``patchstream index`` recorded (``checkouts``). A file in a linked git worktree
    of one (``git worktree add``, how parallel agents get their own copy) goes to the agent
    workspace named after the worktree's branch, over the checkout's branch."""
    registry = load_registry(settings.gateway.config)
    recorded = read_checkouts()
    # A linked worktree first: one may sit inside its checkout (an agent's copy under the
    # project), and its files belong to its workspace, not to the checkout's branch.
    worktree = _worktree_of(file_path)
    if worktree is not None:
        common_dir, root, branch = worktree
        registered = registry.find_by_git_dir(common_dir)
        if registered is not None and Path(registered.local_path or "/").resolve() != root:
            return Target(registered.name, root, registered.default_branch, branch)
        found = checkout_by_git_dir(common_dir, recorded)
        if found is not None and found.root != root:
            return Target(found.repo, root, found.ref, branch)
    registered = registry.find_by_path(file_path)
    if registered is not None and registered.local_path:
        return Target(registered.name, Path(registered.local_path), registered.default_branch)
    found = checkout_of(file_path, recorded)
    if found is not None:
        return Target(found.repo, found.root, found.ref)
    raise Skipped(f"{file_path} is in no indexed checkout (`patchstream index` it) or "
                  "registered repository (local_path), nor in a worktree of one")  # fmt: skip


def gateway_url(settings: Settings) -> str:
    """The configured gateway, else the one ``up`` serves on this machine."""
    if settings.gateway.url:
        return settings.gateway.url
    return f"http://{client_host(settings.gateway.host)}:{settings.gateway.port}"


def _worktree_of(file_path: Path) -> tuple[Path, Path, str] | None:
    """(common git dir, worktree root, workspace name from its branch) of a linked worktree."""
    where = file_path.parent if not file_path.is_dir() else file_path
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--path-format=absolute", "--git-common-dir",
             "--show-toplevel", "--abbrev-ref", "HEAD"],
            capture_output=True, text=True, timeout=2, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.splitlines()
    if out.returncode != 0 or len(lines) != 3:
        return None
    common_dir, root, branch = Path(lines[0]).resolve(), Path(lines[1]).resolve(), lines[2]
    # A workspace is a name: the branch's (the directory's when detached), with what names
    # may not hold replaced.
    raw = root.name if branch == "HEAD" else branch
    name = re.sub(r"[^A-Za-z0-9._\-]", "-", raw).strip("-.").replace("..", "-")[:100]
    return common_dir, root, name or "worktree"


def _ignored_by_git(root: Path, relative: str) -> bool:
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-q", "--no-index", "--", relative],
            capture_output=True, timeout=2, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def check_publishable(root: Path, relative: str) -> None:
    """Skipped when git ignores the file (what may leave the machine of it is
    ``parsing.indexable``'s to say)."""
    if _ignored_by_git(root, relative):
        raise Skipped(f"{relative} is ignored by git")


def handle(payload: dict[str, Any], settings: Settings) -> dict[str, Any] | None:
    if payload.get("tool_name") in SHELL_TOOLS and query_configured(settings):
        print(f"patchstream hook: {record_shell_output(settings, payload)}", file=sys.stderr)
        return None
    if payload.get("tool_name") not in WRITE_TOOLS:
        return None
    tool_input = payload.get("tool_input") or {}
    raw = tool_input.get("file_path")
    if not raw or not isinstance(raw, str):
        return None
    file_path = Path(raw)
    if not file_path.is_absolute():
        file_path = Path(payload.get("cwd") or ".") / file_path
    file_path = file_path.resolve()
    target = target_of(file_path, settings)
    root, repo = target.root, target.repo
    relative = file_path.relative_to(root.resolve()).as_posix()
    check_publishable(root, relative)
    session = payload.get("session_id")
    with PatchClient(gateway_url(settings), settings.gateway.api_key.get_secret_value(),
                     timeout_s=3.0, workspace=target.workspace) as client:  # fmt: skip
        if not file_path.exists():
            return client.delete_file(repo, relative, target.ref, session_id=session)
        skip, data = judge_file(file_path, relative, settings.parsing.max_file_bytes)
        if skip is not None and skip.withheld:
            print(f"patchstream hook: withheld {relative}: {skip.detail}; published as a name "
                  f"flagged {skip.reason}", file=sys.stderr)  # fmt: skip
            withheld = {"reason": skip.reason, "size": file_path.stat().st_size}
            return client.write([{"repo": repo, "ref": target.ref, "path": relative,
                                  "op": "upsert", "withheld": withheld, "session_id": session,
                                  "actor": "claude-code"}])  # fmt: skip
        if skip is not None:
            raise Skipped(f"{relative} is not indexed ({skip.reason}: {skip.detail})")
        receipt = client.write_file(repo, relative, data.decode("utf-8", errors="replace"),
                                    target.ref, session_id=session,
                                    actor="claude-code")  # fmt: skip
    if session and query_configured(
        settings
    ):  # the session's working state: what this write changed
        try:
            record_diff(settings, str(session), repo, root, relative)
        except Exception as exc:  # the write is published; the diff is a bonus
            print(f"patchstream hook: diff not recorded: {exc}", file=sys.stderr)
    return receipt


def main(stdin: str, settings: Settings) -> int:
    try:
        result = handle(json.loads(stdin or "{}"), settings)
        if result is not None:
            print(f"patchstream: published {len(result['event_ids'])} write(s)", file=sys.stderr)
    except Skipped as skipped:
        print(f"patchstream hook: skipped: {skipped}", file=sys.stderr)
    except Exception as exc:  # never fail the agent's tool call
        print(f"patchstream hook: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0
