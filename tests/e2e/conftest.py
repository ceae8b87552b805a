"""The whole embedded stack, as ``patchstream up`` runs it: Tansu, FalkorDB, Milvus Lite, a
Faust parse worker and both sinks as child processes, on free ports, in a temporary dir."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from patchstream.config.settings import (
    EmbeddedSettings,
    GatewaySettings,
    KafkaSettings,
    ParsingSettings,
    PipelineSettings,
    QuerySettings,
    Settings,
)
from patchstream.embedded.services import free_port
from patchstream.embedded.supervisor import Supervisor
from patchstream.errors import PortInUseError

ALLOWED_TENANTS = ["default", "acme", "rebuild"]
LOG_TAIL_BYTES = 6000  # of each stack log, shown with a failed test


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed e2e test shows the tail of its stack's logs: a CI run keeps nothing else, and
    a stall or a crash inside a worker is read there, not in the assertion."""
    outcome = yield
    report = outcome.get_result()
    supervisor = getattr(item, "funcargs", {}).get("stack")
    if not report.failed or not isinstance(supervisor, Supervisor):
        return
    for path in sorted((Path(supervisor.settings.embedded.data_dir) / "logs").glob("*.log")):
        with contextlib.suppress(OSError):
            with path.open("rb") as log_file:
                log_file.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
                tail = log_file.read().decode(errors="replace")
            report.sections.append((f"stack log {path.name} (tail)", tail))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    data_dir = tmp_path_factory.mktemp("stack")
    with running_on_free_ports(lambda: _stack_settings(data_dir)) as supervisor:
        yield supervisor


def _stack_settings(data_dir: Path) -> Settings:
    return Settings(
        embedded=EmbeddedSettings(
            data_dir=str(data_dir),
            kafka_port=free_port(),
            falkordb_port=free_port(),
            milvus_port=free_port(),
            metrics_port=0,  # any free ports
            parse_workers=2,  # partitions spread over two workers, as on a 2-core machine
        ),
        kafka=KafkaSettings(topic_prefix=f"e2e{uuid.uuid4().hex[:6]}.", partitions=4),
        # A jail grown by a few dozen files is replaced after 2 s of quiet: every test runs
        # beside jails being swapped, and test_pipeline checks the swap itself.
        parsing=ParsingSettings(sandbox_refresh_files=40, sandbox_quiet_s=2.0),
        pipeline=PipelineSettings(
            allowed_tenants=ALLOWED_TENANTS, sink_batch_wait_ms=50, retry_backoff_s=0.1
        ),
        query=QuerySettings(
            port=free_port(),
            api_keys={"key-acme": "acme", "key-default": "default", "key-rebuild": "rebuild",
                      "key-agent-acme": "acme"},
            agent_keys=["key-agent-acme"],  # an agent's key: it may not speak as the user
        ),
        # The query service's keys too (and the dev key): a client of the server holds one key.
        gateway=GatewaySettings(port=free_port(), api_keys={
            "dev-local-key": "default", "key-acme": "acme", "key-default": "default",
            "key-rebuild": "rebuild"}),
    )  # fmt: skip


@contextlib.contextmanager
def running_on_free_ports(settings: Callable[[], Settings], tries: int = 3) -> Iterator[Supervisor]:
    """``running`` with ports picked afresh when one was taken before the stack bound it.
    A free port is picked long before its service starts (the gateway starts last, tens of
    seconds later), and a stack of another test worker may take it meanwhile: CI once failed
    a whole module so ("127.0.0.1:54163 is already in use")."""
    for attempt in range(1, tries + 1):
        supervisor = Supervisor(settings())
        try:
            supervisor.start()
        except PortInUseError:
            supervisor.stop()
            if attempt == tries:
                raise
            continue
        try:
            yield supervisor
        finally:
            supervisor.stop()
        return


@contextlib.contextmanager
def running(settings: Settings) -> Iterator[Supervisor]:
    """A started embedded stack, stopped however the block ends."""
    supervisor = Supervisor(settings)
    try:
        supervisor.start()
        yield supervisor
    finally:
        supervisor.stop()


def wait_for(check: Callable[[], bool], timeout: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def make_repo(root: Path, files: dict[str, str]) -> Path:
    import subprocess

    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir(exist_ok=True)
    (root / "ignored" / "skip.py").write_text("def never_indexed():\n    pass\n")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "init",
        ],
        check=True,
        # A fixed date, so the commit (its sha and its searchable message row) is the same in
        # every run: with the hashing embedder a new sha moved that row's rank from run to run.
        env={
            **os.environ,
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        },
    )
    return root
