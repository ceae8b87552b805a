"""GitHub and GitLab push webhooks: authentication, payload reading, and the push -> events job."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchstream.errors import ContractError
from patchstream.http.security import safe_json
from patchstream.parsing.commit_text import HEAD_PATH, commit_path, render_commit
from patchstream.producers.branch_overlays import (
    closing_events,
    default_head,
    first_push_base,
    merged_branches,
)
from patchstream.producers.git_history import read_history
from patchstream.producers.git_mirror import (
    ZERO_SHA,
    Mirror,
    validate_branch,
)
from patchstream.producers.registry import RegisteredRepo, Registry
from patchstream.schemas.events import ACTOR_PATTERN, ID_PATTERN, BlobRef, PatchEvent, Source
from patchstream.system.git_safety import validate_object_id

_ACTOR = re.compile(ACTOR_PATTERN)
_DELIVERY = re.compile(ID_PATTERN)
# A push publishes at most this many of its new commits (a first push of a branch with a long
# history of its own: its older pages come with the next `index`).
PUSHED_COMMITS = 5_000


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
    accepted_id: int | None = None  # its row in the outbox's accepted pushes

    @property
    def deletes_branch(self) -> bool:
        return self.after == ZERO_SHA


def _branch(ref: str) -> str | None:
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _actor(value: object) -> str | None:
    """The pusher's name when it is a plain name; anything else is dropped, not logged."""
    return value if isinstance(value, str) and _ACTOR.fullmatch(value) else None


def validate_delivery(delivery: str | None) -> str | None:
    if delivery is not None and not _DELIVERY.fullmatch(delivery):
        raise ContractError("delivery id header is not a plain id", code="bad_delivery")
    return delivery


def _push(
    repo: RegisteredRepo | None,
    payload: dict[str, Any],
    actor: object,
    source: Source,
    delivery: str | None,
) -> Push | None:
    """Validate everything bound for git before anything runs (UnsafeGitInput otherwise)."""
    raw_ref = payload.get("ref")
    branch = _branch(raw_ref) if isinstance(raw_ref, str) else None
    if repo is None or branch is None or not payload.get("after"):
        return None
    after = validate_object_id(payload["after"], "after")
    before = payload.get("before")
    if before is not None:
        before = validate_object_id(before, "before")
    return Push(repo, validate_branch(branch), before, after, _actor(actor), source,
                validate_delivery(delivery))  # fmt: skip


def github_repo(registry: Registry, payload: dict[str, Any]) -> RegisteredRepo | None:
    """The registered repository a GitHub payload's ``repository`` names."""
    repository = _mapping(payload.get("repository"))
    keys = ("clone_url", "html_url", "ssh_url", "git_url", "url")
    return registry.find_by_url(*(str(repository.get(k, "")) for k in keys))


def gitlab_repo(registry: Registry, payload: dict[str, Any]) -> RegisteredRepo | None:
    project = _mapping(payload.get("project"))
    keys = ("git_http_url", "git_ssh_url", "web_url", "http_url")
    return registry.find_by_url(*(str(project.get(k, "")) for k in keys))


def read_github_push(
    registry: Registry, payload: dict[str, Any], delivery: str | None
) -> Push | None:
    actor = _mapping(payload.get("pusher")).get("name")
    return _push(github_repo(registry, payload), payload, actor, "github", delivery)


def read_gitlab_push(
    registry: Registry, payload: dict[str, Any], delivery: str | None
) -> Push | None:
    repo = gitlab_repo(registry, payload)
    return _push(repo, payload, payload.get("user_username"), "gitlab", delivery)


def events_for_push(
    push: Push, repos_dir: Path, local_roots: Sequence[str | Path] = ()
) -> tuple[list[PatchEvent], list[str]]:
    """Fetch the mirror and turn the push into patch events (plus rejected paths).

    The base is what the mirror held for the branch before this fetch (what the index was
    built from), so a force push is diffed against the indexed state, not the payload's
    ``before``. A deleted branch becomes a delete of every file it had.
    """
    mirror = Mirror(repos_dir, push.repo.tenant, push.repo.name, push.repo.clone_url, local_roots)
    indexed = mirror.ref_sha(push.ref)
    mirror.fetch()
    version = time.time_ns()
    default = push.repo.default_branch
    overlay = push.ref != default  # any other branch is an overlay of the default one
    common = {
        "tenant": push.repo.tenant, "repo": push.repo.name, "ref": push.ref, "version": version,
        "source": push.source, "actor": push.actor, "batch_id": push.after,
        "commit": None if push.deletes_branch else push.after,
        "base_ref": default if overlay else None,
    }  # fmt: skip
    events: list[PatchEvent] = []
    if stale_push(mirror, push, indexed):
        return [], []
    if push.deletes_branch:
        base = indexed or push.before
        if not base or base == ZERO_SHA or not mirror.has_commit(base):
            return [], []
        if overlay:
            head = default_head(mirror, default)
            return closing_events(mirror, head, push.ref, base, common), []
        listing = mirror.files(base)
        events = [PatchEvent(path=c.path, op="delete", **common) for c in listing.changes]
        return events, listing.rejected
    if overlay and indexed is None:
        base = first_push_base(mirror, default, push.after)
    else:
        base = indexed or push.before
    if not overlay and indexed is not None:
        # Branches this push merged: their overlays close (diffed from the old head).
        for branch, sha in merged_branches(mirror, default, push.after):
            events += closing_events(mirror, indexed, branch, sha,
                                     {**common, "base_ref": default})  # fmt: skip
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
    since = base if base and base != ZERO_SHA and mirror.has_commit(base) else None
    history, _ = read_history(mirror.path, PUSHED_COMMITS, push.after, since, mirror=True)
    for commit in history:
        events.append(PatchEvent(path=commit_path(commit.info.sha), op="upsert",
                                 content=render_commit(commit.info, commit.message),
                                 **{**common, "commit": commit.info.sha}))  # fmt: skip
    # The ref's history starts here now: a force-push's dropped commits are out of its view.
    events.append(PatchEvent(path=HEAD_PATH, op="upsert", content=f"{push.after}\n", **common))
    return events, result.rejected


def stale_push(mirror: Mirror, push: Push, indexed: str | None) -> bool:
    """An out-of-order delivery: its ``after`` is already behind what was indexed, and the
    remote has moved on (a force push back to an older commit is not stale: the remote is at
    ``after``)."""
    if push.deletes_branch or indexed is None or indexed == push.after:
        return indexed is not None and indexed == push.after
    remote = mirror.incoming_sha(push.ref)
    return remote != push.after and mirror.is_ancestor(push.after, indexed)


def mark_indexed(push: Push, repos_dir: Path, local_roots: Sequence[str | Path] = ()) -> None:
    """After every event of the push was acknowledged: the branch's indexed commit moves."""
    mirror = Mirror(repos_dir, push.repo.tenant, push.repo.name, push.repo.clone_url, local_roots)
    if push.deletes_branch:
        mirror.mark_indexed(push.ref, None)
    elif not stale_push(mirror, push, mirror.ref_sha(push.ref)):
        if push.ref == push.repo.default_branch and mirror.ref_sha(push.ref) is not None:
            for branch, _sha in merged_branches(mirror, push.ref, push.after):
                mirror.mark_indexed(branch, None)  # closed: a later push starts it afresh
        mirror.mark_indexed(push.ref, push.after)


def parse_json(body: bytes) -> dict[str, Any]:
    """The payload as a JSON object; ContractError for anything else (nesting bounded)."""
    data = safe_json(body)
    if not isinstance(data, dict):
        raise ContractError("payload is not a JSON object", code="not_object")
    return data
