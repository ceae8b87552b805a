"""Sandboxed parsing: a jail parses exactly as the worker would, code run inside it reaches no
network, file, environment or process outside, and one file's crash, hang or out-of-memory
costs that file only (retried once in a fresh jail, then flagged with its last good state)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstream import parsing
from patchstream.config.settings import ParsingSettings
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.jail import FileFlagged, JailedStateBuilder, spawn
from patchstream.parsing.jail_child import read_frame
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.graph import SymbolKind
from patchstream.streams.blobs import BlobReader
from patchstream.streams.parse_stage import ParseStage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOOD = b"def keep(x):\n    return helper(x)\n\n\ndef helper(x):\n    return x + 1\n"


@pytest.fixture
def jailed() -> Iterator[JailedStateBuilder]:
    builder = JailedStateBuilder(ParsingSettings())
    builder.start()
    yield builder
    builder.close()


@pytest.fixture(scope="module")
def fuzz_jail() -> Iterator[JailedStateBuilder]:
    builder = JailedStateBuilder(ParsingSettings())
    builder.start()
    yield builder
    builder.close()


def _target(path: str, version: int = 1) -> FileRef:
    return FileRef("t1", "demo", "main", path, version)


def test_a_jailed_state_equals_the_one_built_in_the_worker(jailed: JailedStateBuilder) -> None:
    in_process = FileStateBuilder(ParsingSettings())
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.stat().st_size < 50_000)
    suffixes = {".py", ".ts", ".go", ".java", ".rs", ".js", ".c", ".cc", ".cs", ".kt", ".scala",
                ".php", ".rb", ".swift"}  # fmt: skip
    assert len({p.suffix for p in files} & suffixes) == 14
    for path in files:
        data = path.read_bytes()
        rel = path.relative_to(FIXTURES).as_posix()
        assert jailed.build(_target(rel), data) == in_process.build(_target(rel), data), rel
    # A syntax error keeps the last good symbols, merged in the worker from the jail's lines.
    broken = GOOD.replace(b"return x + 1", b"return (x +")
    before = in_process.build(_target("m.py"), GOOD)
    expected = in_process.build(_target("m.py", 2), broken, before)
    assert jailed.build(_target("m.py", 2), broken, before) == expected
    assert expected.flags.has_errors and "helper" in {s.name for s in expected.symbols}
    assert jailed.jail is not None and jailed.started == 1  # one jail served them all


def test_a_jail_runs_with_every_layer_this_machine_offers(jailed: JailedStateBuilder) -> None:
    assert jailed.jail is not None
    layers = set(jailed.jail.layers)
    assert {"rlimits", "landlock-net", "landlock-scope", "seccomp-no-sockets"} <= layers
    assert {"userns+netns", "netns"} & layers
    assert any(layer.startswith("landlock-abi") and layer.endswith("-fs") for layer in layers)
    status = Path(f"/proc/{jailed.jail.pid}/environ").read_bytes()
    # An empty environment: no settings, keys or passwords; only a pure-Python parent's choice.
    assert status == (b"" if parsing.COMPILED else b"PATCHSTREAM_PURE_PYTHON=1\0")
    assert jailed.jail.compiled is parsing.COMPILED  # the jail runs what the worker runs


_EXPLOIT = """
import json, os, socket, subprocess, sys, resource
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.jail_child import frame, lock_down, warm_up
from patchstream.config.settings import ParsingSettings
settings = ParsingSettings.model_validate_json(sys.argv[1])
probe = json.loads(sys.stdin.buffer.readline())
warm_up(FileStateBuilder(settings))
if probe["lock"]:
    lock_down(settings.sandbox_memory_mb, settings.sandbox_cpu_s)
found = {}
def attempt(name, action):
    try:
        found[name] = repr(action())[:80]
    except BaseException as exc:
        found[name] = "refused: " + type(exc).__name__
def tcp():
    with socket.create_connection(("127.0.0.1", probe["port"]), timeout=2) as s:
        return s.recv(5)
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect(probe["unix"])
    return s.recv(5)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return s.sendto(b"x", ("127.0.0.1", probe["port"]))
attempt("tcp", tcp)
attempt("unix", unix)
attempt("udp", udp)
attempt("read_secret", lambda: open(probe["secret"]).read())
attempt("list_data_dir", lambda: os.listdir(probe["data_dir"]))
attempt("parent_environ", lambda: open(f"/proc/{probe['parent']}/environ", "rb").read())
attempt("write_file", lambda: open(probe["data_dir"] + "/dropped", "w").write("x"))
attempt("signal_parent", lambda: os.kill(probe["parent"], 0))
attempt("raise_memory_limit", lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1)))
attempt("run_shell", lambda: subprocess.run(["/bin/sh", "-c", "true"], check=True))
found["environment"] = dict(os.environ)
sys.stdout.buffer.write(frame(json.dumps(found).encode()))
sys.stdout.buffer.flush()
"""
_EXPLOIT_BOOT = ("import json, sys; sys.path.insert(0, sys.argv.pop(1)); "
                 "exec(json.loads(sys.stdin.buffer.readline()))")  # fmt: skip


def _run_exploit(tmp_path: Path, lock: bool) -> tuple[dict[str, object], int]:
    """Runs the exploit in a process spawned exactly as a jail is, locked down or not;
    returns what each attempt came to and how many connections the listener accepted."""
    data_dir = tmp_path / f"data-{lock}"
    data_dir.mkdir()
    (data_dir / "falkordb.password").write_text("hunter2")
    listener = socket.create_server(("127.0.0.1", 0))
    unix_path = str(tmp_path / f"bus-{lock}.sock")
    unix_listener = socket.socket(socket.AF_UNIX)
    unix_listener.bind(unix_path)
    unix_listener.listen()
    accepted = []

    def accept(server: socket.socket) -> None:
        server.settimeout(20)
        try:
            conn, _ = server.accept()
        except OSError:
            return
        accepted.append(conn)
        conn.sendall(b"hello")

    threads = [threading.Thread(target=accept, args=(s,), daemon=True)
               for s in (listener, unix_listener)]  # fmt: skip
    for thread in threads:
        thread.start()
    process = spawn(ParsingSettings(), _EXPLOIT_BOOT)
    probe = {"lock": lock, "port": listener.getsockname()[1], "unix": unix_path,
             "secret": str(data_dir / "falkordb.password"), "data_dir": str(data_dir),
             "parent": os.getpid()}  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(_EXPLOIT).encode() + b"\n" + json.dumps(probe).encode() + b"\n")
    process.stdin.flush()
    reply = read_frame(process.stdout)
    process.wait(30)
    listener.close()
    unix_listener.close()
    assert reply is not None, "the probe said nothing"
    return json.loads(reply), len(accepted)


def test_code_run_in_the_jail_reaches_no_network_file_environment_or_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHSTREAM_GRAPH__PASSWORD", "hunter2")
    # The same probe without the lock-down reaches everything: the test can fail.
    free, connections = _run_exploit(tmp_path, lock=False)
    assert free["read_secret"] == "'hunter2'" and connections == 2
    assert not str(free["tcp"]).startswith("refused")

    found, connections = _run_exploit(tmp_path, lock=True)
    attempts = {name: value for name, value in found.items() if name != "environment"}
    assert all(str(value).startswith("refused") for value in attempts.values()), attempts
    assert connections == 0
    # Nothing of the worker's environment; Python sets its own LC_CTYPE (locale coercion), and
    # a pure-Python worker passes that choice on.
    allowed = {"LC_CTYPE"} | (set() if parsing.COMPILED else {parsing.PURE_ENV})
    assert set(found["environment"]) <= allowed  # type: ignore[arg-type]
    assert not (tmp_path / "data-True" / "dropped").exists()


def _big_python(functions: int) -> bytes:
    return "".join(f"def f{i}(a, b):\n    return g{i}(a) + h(b, [x for x in a])\n\n"
                   for i in range(functions)).encode()  # fmt: skip


def _kill_every_jail_mid_parse(
    builder: JailedStateBuilder, sig: int, stop: threading.Event
) -> None:
    """Kills each jail that comes up, half a second after it is ready and handed the file."""
    killed: set[int] = set()
    while not stop.is_set():
        jail = builder.jail
        if jail is not None and jail.pid not in killed:
            time.sleep(0.5)
            os.kill(jail.pid, sig)
            killed.add(jail.pid)
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_file_whose_jail_is_killed_twice_is_flagged_and_keeps_its_last_good_state(
    sig: int,
) -> None:
    # A budget the file can't reach: only the kills stop it.
    builder = JailedStateBuilder(ParsingSettings(timeout_micros=120_000_000))
    builder.start()
    previous = builder.build(_target("big.py"), GOOD)
    stop = threading.Event()
    killer = threading.Thread(target=_kill_every_jail_mid_parse, args=(builder, sig, stop))
    killer.start()
    try:
        with pytest.raises(FileFlagged) as flagged:
            builder.build(_target("big.py", 2), _big_python(6000), previous)
    finally:
        stop.set()
        killer.join()
    name = signal.Signals(sig).name
    assert flagged.value.reason.count(f"killed by {name}") == 2, flagged.value.reason
    state = flagged.value.state
    assert state.flags.parse_failed and state.version == 2
    assert state.symbols == previous.symbols and state.edges == previous.edges
    after = builder.build(_target("next.py"), GOOD)  # the next file: a fresh jail parses it
    assert {s.name for s in after.symbols} >= {"keep", "helper"}
    assert builder.started == 3
    builder.close()


def test_a_file_over_the_memory_limit_is_flagged_and_the_next_one_parses() -> None:
    builder = JailedStateBuilder(ParsingSettings(sandbox_memory_mb=64, timeout_micros=60_000_000))
    builder.start()
    with pytest.raises(FileFlagged) as flagged:
        builder.build(_target("huge.py"), _big_python(25_000))
    assert flagged.value.state.flags.parse_failed
    assert [s.kind for s in flagged.value.state.symbols] == [SymbolKind.FILE]
    assert "then in a fresh jail" in flagged.value.reason
    after = builder.build(_target("next.py"), GOOD)
    assert {s.name for s in after.symbols} >= {"keep", "helper"} and not after.flags.parse_failed
    builder.close()


def test_a_hung_jail_is_killed_at_its_wall_budget_and_a_fresh_one_parses_the_file() -> None:
    builder = JailedStateBuilder(ParsingSettings(sandbox_wall_s=2.0))
    builder.start()
    assert builder.jail is not None
    hung = builder.jail.pid
    os.kill(hung, signal.SIGSTOP)  # it will never answer
    state = builder.build(_target("m.py"), GOOD)
    assert {s.name for s in state.symbols} >= {"keep", "helper"}
    assert builder.started == 2 and builder.jail is not None and builder.jail.pid != hung
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)  # killed and reaped, not left stopped
    builder.close()


def test_the_parse_stage_applies_a_flagged_file_and_says_why(tmp_path: Path) -> None:
    builder = JailedStateBuilder(ParsingSettings(sandbox_memory_mb=64, timeout_micros=60_000_000))
    builder.start()
    stage = ParseStage(builder, BlobReader(tmp_path))
    event = PatchEvent(tenant="t1", repo="demo", path="huge.py", op="upsert", version=1,
                       content=_big_python(25_000).decode(), source="agent")  # fmt: skip
    output = stage.handle(event, None)
    assert output.flagged is not None and "fresh jail" in output.flagged
    assert output.state is not None and output.state.flags.parse_failed
    assert [d.flags.parse_failed for d in output.deltas] == [True]
    builder.close()


def _fixture_per_language() -> dict[str, bytes]:
    chosen: dict[str, bytes] = {}
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix in {
            ".py",
            ".ts",
            ".go",
            ".java",
            ".rs",
            ".js",
            ".c",
            ".cc",
            ".cs",
            ".kt",
            ".scala",
            ".php",
            ".rb",
            ".swift",
        } and (path.is_file()):
            chosen.setdefault(path.suffix, path.read_bytes()[:6000])
    return chosen


_SEEDS = _fixture_per_language()


_SPLICES = [b"{", b"(", b"[", b"'", b'"', b"\\", b"/*", b"\xff\xfe", b"\n\t", b"<", b"=>", b"::"]


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    """A real file of one of the grammars (C and C++ too), cut, spliced and flipped."""
    suffix = draw(st.sampled_from(sorted(_SEEDS)))
    data = bytearray(_SEEDS[suffix])
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["flip", "cut", "splice", "repeat"]))
        if how == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif how == "cut":
            del data[at : at + draw(st.integers(1, 400))]
        elif how == "splice":
            data[at:at] = draw(st.sampled_from(_SPLICES))
        else:
            data[at:at] = bytes(data[at : at + 200]) * draw(st.integers(2, 40))
    return f"fuzz{suffix}", bytes(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_mutated())
def test_mutated_real_files_never_kill_the_worker_and_any_failure_is_flagged(
    fuzz_jail: JailedStateBuilder, case: tuple[str, bytes]
) -> None:
    """Fuzzing smoke (the longer run is ``bench/fuzz_parse.py``): every mutation comes back as a
    state, or as a flagged file with a reason; nothing else escapes, and the jail parses on."""
    path, data = case
    try:
        state = fuzz_jail.build(_target(path), data)
    except FileFlagged as flagged:
        assert flagged.reason and flagged.state.flags.parse_failed
    else:
        assert state.content_hash and state.symbols[0].kind is SymbolKind.FILE


_LYING_JAIL = """import sys; sys.path.insert(0, sys.argv.pop(1))
from patchstream.parsing.jail_child import frame, read_frame
out = sys.stdout.buffer
out.write(frame(b'{"ready": true, "layers": []}')); out.flush()
while read_frame(sys.stdin.buffer) is not None and read_frame(sys.stdin.buffer) is not None:
    out.write(REPLY); out.flush()
"""


@pytest.mark.parametrize(
    "reply",
    [
        b'frame(b\'{"ok": true, "error_lines": [], "cpu_s": 0}\') + frame(b\'{"path": "x"}\')',
        b"b'\\xff\\xff\\xff\\xff' + b'{'",  # a 4 GiB frame announced
        b"frame(b'[1, 2]') + frame(b'')",
    ],
)
def test_a_jail_that_answers_outside_its_contract_is_replaced_and_the_file_flagged(
    monkeypatch: pytest.MonkeyPatch, reply: bytes
) -> None:
    """What a compromised jail says is untrusted: an invalid state, an absurd frame length or
    a reply of the wrong shape kills it; in two jails, the file is flagged."""
    monkeypatch.setattr("patchstream.parsing.jail._BOOT",
                        _LYING_JAIL.replace("REPLY", reply.decode()))  # fmt: skip
    builder = JailedStateBuilder(ParsingSettings(sandbox_wall_s=10))
    builder.start()
    with pytest.raises(FileFlagged) as flagged:
        builder.build(_target("m.py"), GOOD)
    assert flagged.value.reason.count("outside its contract") == 2, flagged.value.reason
    assert builder.started == 2
    builder.close()


def test_a_jail_grown_by_a_burst_is_replaced_when_the_stage_goes_quiet() -> None:
    builder = JailedStateBuilder(ParsingSettings(sandbox_refresh_files=3))
    builder.start()
    try:
        assert builder.jail is not None
        first = builder.jail.pid
        before = builder.build(_target("a.py"), GOOD)
        builder.build(_target("b.py"), GOOD)
        assert builder.quiet() is False and builder.jail.pid == first  # 2 files: kept
        builder.build(_target("c.py"), GOOD)
        assert builder.quiet() is True
        assert builder.jail.pid != first and builder.jail.files == 0
        with pytest.raises(ProcessLookupError):
            os.kill(first, 0)  # the grown jail is gone, not left running
        assert builder.build(_target("a.py"), GOOD) == before  # the fresh one parses alike
    finally:
        builder.close()


_SPINNING_JAIL = """
import sys
from patchstream.parsing.jail_child import frame, read_frame
out = sys.stdout.buffer
out.write(frame(b'{"ready": true, "layers": []}')); out.flush()
read_frame(sys.stdin.buffer); read_frame(sys.stdin.buffer)
while True:  # a step nothing cancels: the worker's CPU watch must stop it
    pass
"""


def test_a_file_spinning_past_its_cpu_budget_is_flagged_at_once_not_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #53: a file whose parse could not be cancelled held the files behind it for
    ~40 s (four budgets and 2 s, then all of it again in a fresh jail). CPU time is the same
    on a retry: the file is flagged the first time, after two budgets and a second."""
    monkeypatch.setattr("patchstream.parsing.jail._BOOT",
                        "import sys; sys.path.insert(0, sys.argv.pop(1)); exec("
                        f"{_SPINNING_JAIL!r})")  # fmt: skip
    builder = JailedStateBuilder(ParsingSettings(timeout_micros=300_000, sandbox_wall_s=60))
    builder.start()
    previous = FileStateBuilder(ParsingSettings()).build(_target("m.py"), GOOD)
    with pytest.raises(FileFlagged) as flagged:
        builder.build(_target("m.py", 2), GOOD, previous)
    assert "over the file's CPU budget of 1.6s" in flagged.value.reason
    assert "fresh jail" not in flagged.value.reason and builder.started == 1
    state = flagged.value.state
    assert state.flags.raised() == ["parse_timeout"] and state.symbols == previous.symbols
    builder.close()


def test_unclosed_parentheses_are_flagged_within_the_budget_in_the_jail(
    jailed: JailedStateBuilder,
) -> None:
    """200,000 unclosed parentheses made one ERROR node whose query ran 15.5 CPU-s and could
    not be cancelled; the width is looked at first, and the file keeps its last good state."""
    previous = jailed.build(_target("p.py"), GOOD)
    state = jailed.build(_target("p.py", 2), b"x = " + b"(" * 200_000 + b"\n", previous)
    assert state.flags.parse_timeout and state.symbols == previous.symbols
    after = jailed.build(_target("next.py"), GOOD)
    assert {s.name for s in after.symbols} >= {"keep", "helper"}
    assert jailed.started == 1  # nothing was killed


def test_a_memory_error_that_surfaces_as_a_system_error_is_still_out_of_memory() -> None:
    """A suite run failed with ``SystemError: <built-in function thread_time> returned a
    result with an exception set``: the jail's heap ran out inside a C call, and the child
    reported a parser bug instead of running out of memory (the fresh-jail retry)."""
    from patchstream.parsing.jail_child import out_of_memory

    try:
        try:
            raise MemoryError
        except MemoryError as cause:
            raise SystemError("<built-in function thread_time> returned a result") from cause
    except SystemError as exc:
        assert out_of_memory(exc)
    assert out_of_memory(MemoryError())
    assert not out_of_memory(ValueError("a bug"))
    loop = ValueError("a cycle")
    loop.__context__ = loop
    assert not out_of_memory(loop)
