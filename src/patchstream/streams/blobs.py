"""Content of git blobs, read from a bare mirror with ``git cat-file`` (never a checkout)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from patchstream.errors import ContractError
from patchstream.system.git_safety import git_environment, validate_object_id


class BlobReader:
    """Reads blobs from ``<repos_dir>/<tenant>/<repo>.git``."""

    def __init__(self, repos_dir: str) -> None:
        self.repos_dir = Path(repos_dir) if repos_dir else None

    def read(self, tenant: str, repo: str, sha: str) -> bytes:
        if self.repos_dir is None:
            raise ContractError(
                "event references a git blob but PATCHSTREAM_PIPELINE__REPOS_DIR is not set",
                code="blob_unavailable",
            )
        mirror = self.repos_dir / tenant / f"{repo}.git"
        if not mirror.is_dir():
            raise ContractError(
                f"no mirror for {tenant}/{repo} at {mirror}", code="blob_unavailable"
            )
        validate_object_id(sha, "blob")
        result = subprocess.run(
            ["git", "--git-dir", str(mirror), "cat-file", "blob", "--end-of-options", sha],
            capture_output=True,
            timeout=30,
            check=False,
            env=git_environment(),
        )
        if result.returncode != 0:
            message = result.stderr.decode("utf-8", "replace").strip()[:300]
            raise ContractError(
                f"blob {sha} not found in {mirror}: {message}", code="blob_unavailable"
            )
        return result.stdout
