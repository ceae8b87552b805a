from __future__ import annotations

from pathlib import Path

import pytest

from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.state import FileState

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def builder() -> FileStateBuilder:
    return FileStateBuilder()


def build_state(
    builder: FileStateBuilder,
    path: str,
    content: bytes,
    *,
    version: int = 1,
    previous: FileState | None = None,
    repo: str = "r",
) -> FileState:
    target = FileRef(tenant="t", repo=repo, ref="main", path=path, version=version)
    return builder.build(target, content, previous)
