"""``patchstream up`` as a user runs it: starts everything, says where, stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from patchstream.config.stack_addresses import milvus_socket_path
from patchstream.embedded.services import free_port, port_is_open
from tests.e2e.conftest import make_repo, wait_for


def _env(tmp_path: Path, ports: dict[str, int]) -> dict[str, str]:
    embedded = {"data_dir": str(tmp_path / "data"), "metrics_port": 0, "parse_workers": 2, **ports}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env["PATCHSTREAM_EMBEDDED"] = json.dumps(embedded)
    env["PATCHSTREAM_QUERY"] = json.dumps({"port": free_port()})
    env["PATCHSTREAM_GATEWAY"] = json.dumps({"port": free_port()})
    return env


def _ports() -> dict[str, int]:
    return {"kafka_port": free_port(), "falkordb_port": free_port(), "milvus_port": free_port()}


def _start_up(
    tmp_path: Path, ports: dict[str, int], env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "patchstream.cli.main", "up"],
        env=env or _env(tmp_path, ports), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    lines: list[str] = []
    assert process.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        lines.append(line)
        if line.startswith("Index a repository"):
            break
    return process, "".join(lines)


def _gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "zombie" in status.read_text().lower()
    except OSError:
        return True


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "patchstream.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip


def test_up_starts_everything_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    ports = _ports()
    env = _env(tmp_path, ports)
    process, output = _start_up(tmp_path, ports, env)
    try:
        pids = _check_started(tmp_path, ports, output)
        _check_a_terminal_beside_it(tmp_path, env)
        # Ctrl-C under `make run`: SIGINT to `up`, then the script's trap forwards a SIGTERM.
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        assert process.wait(90) == 0
    finally:
        if process.poll() is None:  # failed above: no stack is left behind for other tests
            process.kill()
            process.wait(30)
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )
    assert not any(port_is_open("127.0.0.1", port) for port in ports.values())


def _check_started(tmp_path: Path, ports: dict[str, int], output: str) -> list[int]:
    """Every service where `up` says; returns the pids of its Python children."""
    assert "patchstream is up" in output, output
    for name, port in (("tansu", ports["kafka_port"]), ("falkordb", ports["falkordb_port"])):
        assert re.search(rf"{name}\s+listening on 127.0.0.1:{port}", output), output
        assert port_is_open("127.0.0.1", port)
    # Milvus: on a socket only this user can open, and on no port.
    milvus_socket = milvus_socket_path(tmp_path / "data")
    assert re.search(rf"milvus\s+listening on unix:{re.escape(str(milvus_socket))}", output)
    assert stat.S_IMODE(milvus_socket.stat().st_mode) & 0o077 == 0
    assert not port_is_open("127.0.0.1", ports["milvus_port"])
    pids = [int(p) for p in re.findall(r"running, pid (\d+)", output)]
    assert len(pids) == 6  # 2 parse workers, graph sink, vector sink, query service, gateway
    return pids


def _check_a_terminal_beside_it(tmp_path: Path, env: dict[str, str]) -> None:
    """A second terminal with the environment `up` got (what `make run` does): `status` and
    `index` find every service of the stack it names, Milvus's socket included, with no
    client address set."""
    terminal = dict(env)
    assert not {"PATCHSTREAM_VECTOR", "PATCHSTREAM_KAFKA", "PATCHSTREAM_GRAPH"} & set(terminal)
    wait_for(lambda: _cli(terminal, "status", "--quiet").returncode == 0, timeout=120,
             what="status: every service up")  # fmt: skip
    listed = _cli(terminal, "status").stdout.splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in listed}
    milvus_socket = milvus_socket_path(tmp_path / "data")
    assert rows["milvus"] == [f"unix:{milvus_socket}", "up"], rows
    assert rows["stack"][-1] == "up" and rows["stack"][1] == "(pid", rows  # `up` holds it
    repo = make_repo(tmp_path / "repo", {"pkg/m.py": "def f():\n    return 1\n"})
    done = _cli(terminal, "index", str(repo), "--repo", "mine", "--json", "--commits", "0",
                "--timeout", "180")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["complete"], summary["files_scanned"]) == (True, 2), summary  # and .gitignore


def test_children_die_when_up_is_killed(tmp_path: Path) -> None:
    """kill -9 of the supervisor leaves nothing behind: no worker holding a port, no service."""
    ports = _ports()
    process, output = _start_up(tmp_path, ports)
    assert "patchstream is up" in output, output
    pids = [int(p) for p in re.findall(r"running, pid (\d+)", output)]
    assert len(pids) == 6
    process.kill()
    process.wait(30)
    wait_for(lambda: all(_gone(pid) for pid in pids), timeout=60, what="children to exit")
    wait_for(lambda: not any(port_is_open("127.0.0.1", p) for p in ports.values()), timeout=60,
             what="backing services to exit")  # fmt: skip
    # The next `up` on the same ports starts cleanly.
    again, output = _start_up(tmp_path, ports)
    try:
        assert "patchstream is up" in output, output
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(90)


def test_up_refuses_a_taken_port(tmp_path: Path) -> None:
    ports = _ports()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports["kafka_port"]))
        taken.listen()
        env = _env(tmp_path, ports)  # a port held this long is taken, not being let go of
        env["PATCHSTREAM_EMBEDDED"] = json.dumps(
            {**json.loads(env["PATCHSTREAM_EMBEDDED"]), "port_release_wait_s": 1.0}
        )
        result = subprocess.run(
            [sys.executable, "-m", "patchstream.cli.main", "up"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode != 0
    assert f"127.0.0.1:{ports['kafka_port']} is already in use" in result.stderr + result.stdout


def test_a_terminal_in_a_repository_finds_the_stack_started_elsewhere(tmp_path: Path) -> None:
    """`up` in one directory (its data dir the default `.patchstream` there), then `index .`
    from inside a repository: the client used to look for Milvus's socket and FalkorDB's
    password under the repository, and waited for Milvus forever."""
    ports = _ports()
    env = _env(tmp_path, ports)
    embedded = json.loads(env["PATCHSTREAM_EMBEDDED"])
    del embedded["data_dir"]  # the default: relative to where `up` runs
    env["PATCHSTREAM_EMBEDDED"] = json.dumps(embedded)
    home = tmp_path / "stack-home"
    home.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "patchstream.cli.main", "up"], cwd=home,
                               env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    repo = make_repo(tmp_path / "repo", {"pkg/m.py": "def elsewhere():\n    return 1\n"})

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "patchstream.cli.main", *args], cwd=repo,
                              env=env, capture_output=True, text=True, timeout=240)  # fmt: skip

    try:
        wait_for(lambda: cli("status", "--quiet").returncode == 0, timeout=180,
                 what="status from the repository: every service up")  # fmt: skip
        stack_row = next(line for line in cli("status").stdout.splitlines()
                         if line.startswith("stack"))  # fmt: skip
        assert stack_row.split()[1] == str((home / ".patchstream").resolve()), stack_row
        done = cli("index", ".", "--repo", "elsewhere", "--json", "--commits", "0",
                   "--timeout", "180")  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout)["complete"] is True
        assert not (repo / ".patchstream").exists()  # nothing of a stack's in the repository
        assert (home / ".patchstream" / "outbox.sqlite").exists()  # the stack's own outbox
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(90)
