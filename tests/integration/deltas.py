"""Helpers that turn file contents into real deltas, as the parse stage would."""

from __future__ import annotations

from patchstream.parsing.delta import delete_delta, diff_states
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.state import FileDelta

_BUILDER = FileStateBuilder()


def upsert(
    tenant: str,
    path: str,
    content: str,
    version: int,
    repo: str = "app",
    ref: str = "main",
    workspace: str | None = None,
) -> FileDelta:
    target = FileRef(tenant=tenant, repo=repo, ref=ref, path=path, version=version,
                     workspace=workspace)  # fmt: skip
    return diff_states(None, _BUILDER.build(target, content.encode()))


def delete(
    tenant: str,
    path: str,
    version: int,
    repo: str = "app",
    ref: str = "main",
    workspace: str | None = None,
) -> FileDelta:
    return delete_delta(None, tenant=tenant, repo=repo, ref=ref, path=path, version=version,
                        workspace=workspace)  # fmt: skip
