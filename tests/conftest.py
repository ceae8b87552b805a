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
    user's ``~/.local/state`` (the CLI's subprocesses inherit it). A suite started in the
    background of a script inherits SIGINT ignored, and every process it starts would too:
    the tests that stop a watch or `make run` with Ctrl-C could not; a handled SIGINT is
    reset to the default in what they start."""
    import os
    import signal
    import tempfile

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="patchstream-state-")
