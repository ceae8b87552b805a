from __future__ import annotations

from collections.abc import Iterator
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


@pytest.fixture(autouse=True)
def _no_client_profile_between_tests() -> Iterator[None]:
    """A CLI test of a client command turns the process's client mode on (the CLI does, once
    per process); later tests start without it, whatever profile this machine's user has."""
    from patchstream.config.settings import adjust_settings, settings_adjusted

    yield
    if settings_adjusted("client"):
        adjust_settings("client", None)


def pytest_configure(config: pytest.Config) -> None:
    """Checkouts `index` records for agent hooks go to a directory of this run, not to the
    user's ``~/.local/state`` (the CLI's subprocesses inherit it)."""
    import os
    import tempfile

    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="patchstream-state-")


# The longest files start first. Four workers take whole files (``--dist loadfile``); one of
# these started last was the suite's tail (on 2 cores under load: test_chaos 205 s,
# test_restarts 201 s, test_faults 129 s, test_up's three 47-64 s).
_LONGEST_FIRST = ("tests/e2e/test_chaos.py", "tests/e2e/test_restarts.py",
                  "tests/e2e/test_faults.py", "tests/e2e/test_up.py")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return _LONGEST_FIRST.index(path) if path in _LONGEST_FIRST else len(_LONGEST_FIRST)

    items.sort(key=rank)  # stable: every other file keeps its order
