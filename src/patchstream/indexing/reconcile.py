"""The reconciler: what the stores hold for a branch against its source of truth.

For a repository the gateway mirrors, the truth is the branch's indexed commit in the bare
mirror. Every file whose content hash the graph or the vector tier does not hold is published
again (a blob reference, as a push would), and every file the stores hold that the commit does
not have is deleted, unless an agent wrote it last (agent writes were never pushed). Replays
of what is already applied are no-ops (version fences), so the
reconciler can run any time; `up` runs it periodically. For a directory indexed with
``patchstream index``, running ``index`` again is the reconciler (it publishes only what
differs).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchstream.config.settings import Settings
from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.prose import is_virtual
from patchstream.producers.git_mirror import Mirror
from patchstream.schemas.events import BlobRef, PatchEvent
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.stores.overlays import merged_hashes
from patchstream.streams.producer import EventPublisher


@dataclass
class ReconcileSummary:
    tenant: str
    repo: str
    ref: str
    commit: str | None = None
    files: int = 0
    republished: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def repos_dir_of(settings: Settings) -> Path:
    return Path(settings.pipeline.repos_dir or Path(settings.embedded.data_dir) / "mirrors")


def plan_branch(settings: Settings, tenant: str, repo: str, ref: str) -> tuple[
    ReconcileSummary, list[PatchEvent]
]:  # fmt: skip
    """The events that bring the stores back to the mirror's indexed commit of ``ref``."""
    summary = ReconcileSummary(tenant, repo, ref)
    mirror = Mirror(repos_dir_of(settings), tenant, repo, clone_url="")
    commit = mirror.ref_sha(ref)
    summary.commit = commit
    if commit is None:  # nothing was indexed from a push: nothing to compare with
        return summary, []
    listing = mirror.files(commit).changes
    summary.files = len(listing)
    blobs = mirror.read_blobs([c.blob for c in listing if c.blob])
    graph, vectors = open_graph_store(settings), open_vector_store(settings)
    try:
        # An overlay branch compares the commit with what its reads see: base plus its files.
        chain = graph.overlay_chain(tenant, repo, ref)
        graph_hashes = merged_hashes(graph.file_hashes, graph.file_versions, tenant, repo, chain)
        vector_hashes = merged_hashes(vectors.file_hashes, vectors.file_versions, tenant, repo,
                                      chain)  # fmt: skip
        in_tree = {c.path for c in listing}
        extra = sorted((set(graph_hashes) | set(vector_hashes)) - in_tree)
        sources = graph.file_sources(tenant, [(repo, ref, path) for path in extra])
    finally:
        graph.close()
        vectors.close()
    version = time.time_ns()
    common = {"tenant": tenant, "repo": repo, "ref": ref, "version": version,
              "source": "snapshot", "actor": "patchstream-reconcile",
              "batch_id": f"reconcile-{version}", "commit": commit,
              "base_ref": chain[1] if len(chain) > 1 else None}  # fmt: skip
    events: list[PatchEvent] = []
    for change in listing:
        if change.blob is None or change.blob not in blobs:
            continue
        digest = hash_bytes(blobs[change.blob])
        if graph_hashes.get(change.path) == digest and vector_hashes.get(change.path) == digest:
            continue
        events.append(PatchEvent(path=change.path, op="upsert",
                                 blob=BlobRef(sha=change.blob), **common))  # fmt: skip
        summary.republished.append(change.path)
    # Files an agent wrote are not the commit's to take away (they were never pushed).
    for path in (p for p in extra if not is_virtual(p)):
        if sources.get((repo, ref, path)) in ("agent", "cli"):
            continue
        events.append(PatchEvent(path=path, op="delete", **{**common, "commit": None}))
        summary.deleted.append(path)
    return summary, events


async def reconcile_branch(
    settings: Settings, tenant: str, repo: str, ref: str
) -> ReconcileSummary:
    summary, events = plan_branch(settings, tenant, repo, ref)
    if events:
        async with EventPublisher(settings.kafka) as publisher:
            await publisher.publish(events)
    return summary


def mirrored_branches(settings: Settings) -> list[tuple[str, str, str]]:
    """(tenant, repo, branch) of every mirror's indexed branches."""
    found = []
    root = repos_dir_of(settings)
    for git_dir in sorted(root.glob("*/*.git")) if root.is_dir() else []:
        tenant, repo = git_dir.parent.name, git_dir.name.removesuffix(".git")
        for branch in Mirror(root, tenant, repo, clone_url="").indexed_branches():
            found.append((tenant, repo, branch))
    return found
