"""The session working state a Claude Code hook records: the diff of each file the agent
wrote and the output of its shell commands, sent to the query service's session
(``/v1/sessions/{id}/diffs`` and ``/tool-output``). Best effort, bounded, and only when the
query service is configured (``PATCHSTREAM_QUERY__URL``): the hook never fails a tool call.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from patchstream.config.settings import Settings
from patchstream.parsing.indexable import is_secret_name

SHELL_TOOLS = frozenset({"Bash"})
_DIFF_BYTES = 64 * 1024  # the session keeps 8,000 characters; this bounds the request
_OUTPUT_BYTES = 256 * 1024
_WORDS = re.compile(r"[^\s'\"=;|&<>()]+")


def query_configured(settings: Settings) -> bool:
    """Only a query service named in the environment gets working state (the default URL
    would make every shell command try a service that may not exist)."""
    return "url" in settings.query.model_fields_set


def _post(settings: Settings, session_id: str, what: str, body: dict[str, Any]) -> None:
    url = f"{settings.query.url}/v1/sessions/{quote(session_id, safe='')}/{what}"
    headers = {"Authorization": f"Bearer {settings.query.api_key.get_secret_value()}"}
    response = httpx.post(url, json=body, headers=headers, timeout=3.0)
    response.raise_for_status()


def file_diff(root: Path, relative: str) -> str:
    """The file's unified diff against the last commit (a new file: against nothing)."""
    base = ["git", "-C", str(root), "-c", "core.quotePath=false"]
    tracked = (
        subprocess.run(
            [*base, "ls-files", "--error-unmatch", "--", relative],
            capture_output=True,
            timeout=2,
            check=False,
        ).returncode
        == 0
    )
    if tracked:
        command = [*base, "diff", "--no-color", "--no-ext-diff", "HEAD", "--", relative]
    else:
        command = [
            *base,
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-index",
            "--",
            "/dev/null",
            relative,
        ]
    done = subprocess.run(command, capture_output=True, timeout=3, check=False)
    return done.stdout[:_DIFF_BYTES].decode("utf-8", errors="replace")


def record_diff(settings: Settings, session_id: str, repo: str, root: Path, relative: str) -> bool:
    diff = file_diff(root, relative)
    if not diff.strip():
        return False
    _post(settings, session_id, "diffs", {"repo": repo, "path": relative, "diff": diff})
    return True


def record_shell_output(settings: Settings, payload: dict[str, Any]) -> str:
    """Send a shell command's output to the session; what happened, for stderr."""
    session_id = payload.get("session_id")
    tool_input = payload.get("tool_input") or {}
    response = payload.get("tool_response") or {}
    command = str(tool_input.get("command") or "")
    if not session_id or not isinstance(response, dict):
        return "no session or no output"
    # A command that names a secret file may print it: its output never leaves the machine.
    for word in _WORDS.findall(command):
        name = Path(word).name
        if is_secret_name(name):
            return f"skipped: the command names {name} (a key or credential file)"
    code = response.get("exit_code", response.get("returncode"))
    body = {
        "tool": str(payload.get("tool_name") or "Bash")[:200],
        "command": command[:2000],
        "exit_code": code
        if isinstance(code, int)
        else (1 if response.get("interrupted") else None),
        "stdout": str(response.get("stdout") or "")[-_OUTPUT_BYTES:],
        "stderr": str(response.get("stderr") or "")[-_OUTPUT_BYTES:],
    }
    _post(settings, str(session_id), "tool-output", body)
    return "recorded the command's output in the session"
