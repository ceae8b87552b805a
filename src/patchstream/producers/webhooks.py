"""GitHub and GitLab push webhooks: authentication, payload reading, and the push -> events job."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchstream.parsing.prose import COMMITS_DIR
from patchstream.producers.git_mirror import ZERO_SHA, Mirror
from patchstream.producers.registry import RegisteredRepo, Registry
from patchstream.schemas.events import BlobRef, PatchEvent, Source


def github_signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    """``X-Hub-Signature-256: sha256=<hex>`` over the raw body, compared in constant time."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.removeprefix("sha256=").encode())


def gitlab_token_ok(secret: str, header: str | None) -> bool:
    return (
        bool(secret)
        and header is not None
        and hmac.compare_digest(secret.encode(), header.encode())
    )


@dataclass(frozen=True)
class Push:
    repo: RegisteredRepo
    ref: str  # branch name
    before: str | None
    after: str
    actor: str | None
    source: Source
    delivery: str | None

    @property
    def deletes_branch(self) -> bool:
        return self.after == ZERO_SHA


def _branch(ref: str) -> str | None:
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None


def read_github_push(
    registry: Registry, payload: dict[str, Any], delivery: str | None
) -> Push | None:
    repository = payload.get("repository") or {}
    keys = ("clone_url", "html_url", "ssh_url", "git_url", "url")
    repo = registry.find_by_url(*(str(repository.get(k, "")) for k in keys))
    branch = _branch(str(payload.get("ref", "")))
    if repo is None or branch is None or not payload.get("after"):
        return None
    return Push(repo, branch, payload.get("before"), str(payload["after"]),
                (payload.get("pusher") or {}).get("name"), "github", delivery)  # fmt: skip


def read_gitlab_push(
    registry: Registry, payload: dict[str, Any], delivery: str | None
) -> Push | None:
    project = payload.get("project") or {}
    keys = ("git_http_url", "git_ssh_url", "web_url", "http_url")
    repo = registry.find_by_url(*(str(project.get(k, "")) for k in keys))
    branch = _branch(str(payload.get("ref", "")))
    if repo is None or branch is None or not payload.get("after"):
        return None
    return Push(repo, branch, payload.get("before"), str(payload["after"]),
                payload.get("user_username"), "gitlab", delivery)  # fmt: skip


def events_for_push(push: Push, repos_dir: Path) -> tuple[list[PatchEvent], list[str]]:
    """Fetch the mirror and turn the push into patch events (plus rejected paths).

    The base is what the mirror held for the branch before this fetch (what the index was
    built from), so a force push is diffed against the indexed state, not the payload's
    ``before``. A deleted branch becomes a delete of every file it had.
    """
    mirror = Mirror(repos_dir, push.repo.tenant, push.repo.name, push.repo.clone_url)
    indexed = mirror.ref_sha(push.ref)
    mirror.fetch()
    version = time.time_ns()
    common = {
        "tenant": push.repo.tenant, "repo": push.repo.name, "ref": push.ref, "version": version,
        "source": push.source, "actor": push.actor, "batch_id": push.after,
        "commit": None if push.deletes_branch else push.after,
    }  # fmt: skip
    events: list[PatchEvent] = []
    if push.deletes_branch:
        base = indexed or push.before
        if not base or base == ZERO_SHA or not mirror.has_commit(base):
            return [], []
        listing = mirror.files(base)
        events = [PatchEvent(path=c.path, op="delete", **common) for c in listing.changes]
        return events, listing.rejected
    base = indexed or push.before
    result = mirror.diff(base, push.after)
    for change in result.changes:
        if change.status == "D":
            events.append(PatchEvent(path=change.path, op="delete", **common))
        elif change.status == "R":
            events.append(
                PatchEvent(
                    path=change.path,
                    op="rename",
                    old_path=change.old_path,
                    blob=BlobRef(sha=change.blob or ""),
                    **common,
                )
            )
        else:
            events.append(
                PatchEvent(
                    path=change.path, op="upsert", blob=BlobRef(sha=change.blob or ""), **common
                )
            )
    for sha, message in mirror.log_messages(base, push.after, limit=50):
        text = f"# commit {sha}\n\nBranch: {push.ref}\n\n{message}\n"
        events.append(
            PatchEvent(
                path=f"{COMMITS_DIR}{sha}.md",
                op="upsert",
                content=text,
                **{**common, "commit": sha},
            )
        )
    return events, result.rejected


def parse_json(body: bytes) -> dict[str, Any]:
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("payload is not a JSON object")
    return data
