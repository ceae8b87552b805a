"""End to end over the real broker and stores: index, edit, rename, delete, crash, DLQ."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer

from patchstream.bus.topics import Topics
from patchstream.embedded.priority import autogroup_nice
from patchstream.embedded.supervisor import Supervisor
from patchstream.errors import CapacityError
from patchstream.indexing.run import index_directory
from patchstream.schemas.events import PatchEvent
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.streams.dlq import read_dead_letters
from patchstream.streams.producer import EventPublisher
from tests.e2e.conftest import make_repo, wait_for

UTIL = (
    "def helper(x):\n    return x + 1\n\n\nclass Base:\n    def run(self):\n"
    "        return helper(1)\n"
)
APP = (
    "from pkg.util import helper, Base\n\n\ndef main():\n    return helper(2)\n\n\n"
    "class Job(Base):\n    def run(self):\n        return main()\n"
)
JOBS = "from pkg.app import main\n\n\ndef schedule():\n    return main()\n"


def _publish(stack: Supervisor, events: list[PatchEvent]) -> None:
    async def send() -> None:
        async with EventPublisher(stack.settings.kafka) as publisher:
            await publisher.publish(events)

    asyncio.run(send())


def _event(tenant: str, path: str, version: int, **fields: object) -> PatchEvent:
    base: dict[str, object] = {
        "tenant": tenant,
        "repo": "shop",
        "path": path,
        "version": version,
        "source": "agent",
        "op": "upsert",
    }
    base.update(fields)
    return PatchEvent.model_validate(base)


def _views(stack: Supervisor, tenant: str) -> tuple[set[str], set[str]]:
    graph = open_graph_store(stack.settings)
    vectors = open_vector_store(stack.settings)
    try:
        snap = graph.snapshot(tenant)
        symbols = {repr(s).replace(tenant, "T") for s in snap.symbols}
        edges = {repr(e).replace(tenant, "T") for e in snap.edges}
        rows = {repr(r[1:]).replace(tenant, "T") for r in vectors.rows(tenant)}
        return symbols | edges, rows
    finally:
        graph.close()
        vectors.close()


def test_index_then_agent_edits_follow(stack: Supervisor, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "shop", {"pkg/util.py": UTIL, "pkg/app.py": APP, "README.md": "# shop\n"}
    )
    summary = asyncio.run(
        index_directory(
            stack.settings, repo, repo="shop", tenant="acme", timeout_s=180, progress=False
        )
    )
    assert summary.complete and summary.files_scanned == 4  # .gitignore, README, two modules
    assert summary.chunks_embedded > 0 and summary.symbols >= 12
    graph = open_graph_store(stack.settings)
    try:
        assert graph.symbols_by_name("acme", "never_indexed") == []  # .gitignore respected
        callers = {n.symbol.id for n in graph.callers("acme", "shop::pkg/util.py::helper", 1)}
        assert callers == {"shop::pkg/app.py::main", "shop::pkg/util.py::Base.run"}
        # Agent writes: edit util, rename app -> jobs/app.py, add jobs.py, delete README.
        base = time.time_ns()
        edited = UTIL.replace("return x + 1", "return x + 2")
        _publish(stack, [
            _event("acme", "pkg/util.py", base + 1, content=edited),
            _event("acme", "pkg/core.py", base + 2, op="rename", old_path="pkg/app.py",
                   content=APP),
            _event("acme", "pkg/jobs.py", base + 3, content=JOBS.replace("pkg.app", "pkg.core")),
            _event("acme", "README.md", base + 4, op="delete"),
        ])  # fmt: skip
        wait_for(
            lambda: graph.count_applied("acme", "shop", "main", base + 1) == 5,
            what="graph to apply the edits",
        )
        assert graph.file_symbols("acme", "shop", "main", "pkg/app.py") == []
        assert graph.file_symbols("acme", "shop", "main", "README.md") == []
        impact = {n.symbol.id for n in graph.impact("acme", "shop::pkg/util.py::helper", 3)}
        assert "shop::pkg/jobs.py::schedule" in impact and "shop::pkg/core.py::main" in impact
    finally:
        graph.close()
    vectors = open_vector_store(stack.settings)
    try:
        wait_for(
            lambda: vectors.count_applied("acme", "shop", "main", base + 1) == 5,
            what="vectors to apply the edits",
        )
        paths = {row[1].rsplit("|", 1)[1] for row in vectors.rows("acme")}
        paths = {p for p in paths if not p.startswith("_commits/")}  # the commit message
        # .gitignore is plain text (no grammar reads it): searchable too (issue #56)
        assert paths == {"pkg/util.py", "pkg/core.py", "pkg/jobs.py", ".gitignore"}
        texts = " ".join(row[-1] for row in vectors.rows("acme"))
        assert "return x + 2" in texts and "return x + 1" not in texts
    finally:
        vectors.close()
    # Re-index: the agent's files are not in the repo; the repo's are back to their state.
    again = asyncio.run(
        index_directory(
            stack.settings, repo, repo="shop", tenant="acme", timeout_s=180, progress=False
        )
    )
    assert again.complete and again.deleted == 2  # core.py and jobs.py
    # util.py edited back, app.py and README.md re-created, plus the two deletes.
    assert again.published == 5 and again.unchanged == 1
    unchanged = asyncio.run(
        index_directory(
            stack.settings, repo, repo="shop", tenant="acme", timeout_s=180, progress=False
        )
    )
    assert unchanged.published == 0 and unchanged.chunks_embedded == 0
    assert unchanged.unchanged == 4


def test_an_index_the_machine_cannot_hold_is_refused_before_anything_is_published(
    stack: Supervisor, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "big", {"pkg/util.py": UTIL, "pkg/app.py": APP})
    # As if every MB of source cost the stack a petabyte: no machine has that available.
    greedy = stack.settings.embedded.model_copy(update={"memory_mib_per_source_mb": 1e12})
    settings = stack.settings.model_copy(update={"embedded": greedy})
    with pytest.raises(CapacityError, match=r"needs about .* MiB more .* MiB available"):
        asyncio.run(index_directory(settings, repo, repo="big", tenant="acme", timeout_s=60,
                                    progress=False))  # fmt: skip
    graph = open_graph_store(stack.settings)
    try:
        assert graph.scope_counts("acme", "big", "main") == (0, 0, 0)
        assert graph.file_hashes("acme", "big", "main") == {}  # not one file published
    finally:
        graph.close()
    # The same index with the check off goes through whole.
    unchecked = greedy.model_copy(update={"memory_check": False})
    summary = asyncio.run(
        index_directory(stack.settings.model_copy(update={"embedded": unchecked}), repo,
                        repo="big", tenant="acme", timeout_s=180, progress=False)
    )  # fmt: skip
    assert summary.complete and summary.files_scanned == 3 and summary.unchanged == 0


def test_malformed_events_go_to_the_dlq_and_processing_continues(stack: Supervisor) -> None:
    topics = Topics.from_settings(stack.settings.kafka)

    async def feed() -> None:
        async with EventPublisher(stack.settings.kafka) as publisher:
            await publisher.publish_raw(b"k1", b"{not json")
            await publisher.publish_raw(b"k2", json.dumps({"schema_version": 9}).encode())
            bad_tenant = _event("mallory", "a.py", 1, content="x = 1\n").model_dump_json()
            await publisher.publish_raw(b"k3", bad_tenant.encode())
            bad_path = {**json.loads(_event("acme", "a.py", 1, content="x").model_dump_json()),
                        "path": "../../etc/passwd"}  # fmt: skip
            await publisher.publish_raw(b"k4", json.dumps(bad_path).encode())
            await publisher.publish(
                [_event("acme", "after/dlq.py", 7, content="def ok():\n    pass\n")]
            )

    asyncio.run(feed())

    async def read_dlq() -> list[dict[str, object]]:
        consumer = AIOKafkaConsumer(
            topics.dlq, bootstrap_servers=stack.settings.kafka.bootstrap,
            auto_offset_reset="earliest", enable_auto_commit=False,
        )  # fmt: skip
        await consumer.start()
        found: list[dict[str, object]] = []
        try:
            deadline = time.monotonic() + 60
            while len(found) < 4 and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                found += [json.loads(r.value) for rs in batch.values() for r in rs]
        finally:
            await consumer.stop()
        return found

    records = asyncio.run(read_dlq())
    reasons = {str(r["key"]): str(r["reason"]) for r in records}
    assert reasons["k1"].startswith("not JSON")
    assert "schema_version 9 is not supported" in reasons["k2"]
    assert reasons["k3"] == "unknown tenant 'mallory'"
    assert "path" in reasons["k4"] and "'..'" in reasons["k4"]
    assert all(r["stage"] == "parse" and r["value"] for r in records)
    graph = open_graph_store(stack.settings)
    try:
        wait_for(
            lambda: bool(graph.file_symbols("acme", "shop", "main", "after/dlq.py")),
            what="the valid event after the bad ones",
        )
    finally:
        graph.close()


def test_crashed_worker_and_sink_recover_to_a_clean_rebuild(stack: Supervisor) -> None:
    files = {f"mod{i}.py": f"def f{i}(x):\n    return f{(i + 1) % 40}(x)\n" for i in range(40)}
    base = time.time_ns()
    events = [_event("default", path, base + n, content=text)
              for n, (path, text) in enumerate(sorted(files.items()))]  # fmt: skip
    edits = [_event("default", path, base + 100 + n, content=text + "\n\nEXTRA = 1\n")
             for n, (path, text) in enumerate(sorted(files.items())[:20])]  # fmt: skip
    _publish(stack, events)
    parse = next(w for w in stack.workers if w.name == "parse-0")
    vector_sink = next(w for w in stack.workers if w.name == "vector-sink")
    assert parse.process is not None and vector_sink.process is not None
    os.kill(parse.process.pid, signal.SIGKILL)
    os.kill(vector_sink.process.pid, signal.SIGKILL)
    _publish(stack, edits)
    wait_for(lambda: not parse.alive() and not vector_sink.alive(), 10, "the kill")
    stack.check()  # the supervisor restarts both
    assert parse.alive() and vector_sink.alive() and parse.restarts == 1
    # The same final states, applied directly to empty stores for another tenant.
    final = {e.path: e.content for e in events}
    final.update({e.path: e.content for e in edits})
    graph = open_graph_store(stack.settings)
    vectors = open_vector_store(stack.settings)
    try:
        wait_for(lambda: graph.count_applied("default", "shop", "main", base) == 40
                 and graph.count_applied("default", "shop", "main", base + 100) == 20,
                 timeout=240, what="graph after the crash")  # fmt: skip
        wait_for(lambda: vectors.count_applied("default", "shop", "main", base + 100) == 20
                 and vectors.count_applied("default", "shop", "main", base) == 40,
                 timeout=240, what="vectors after the crash")  # fmt: skip
    finally:
        graph.close()
        vectors.close()
    _publish(stack, [_event("rebuild", p, base + 500, content=c) for p, c in final.items()])
    graph = open_graph_store(stack.settings)
    try:
        wait_for(lambda: graph.count_applied("rebuild", "shop", "main", base + 500) == 40,
                 timeout=240, what="rebuild graph")  # fmt: skip
    finally:
        graph.close()
    vectors = open_vector_store(stack.settings)
    try:
        wait_for(lambda: vectors.count_applied("rebuild", "shop", "main", base + 500) == 40,
                 timeout=240, what="rebuild vectors")  # fmt: skip
    finally:
        vectors.close()
    assert _views(stack, "default") == _views(stack, "rebuild")


def test_the_vector_tier_runs_at_lower_priority_in_its_own_scheduling_group(
    stack: Supervisor,
) -> None:
    """Each child is its own session; with autogroups a process nice alone did nothing."""
    nice = stack.settings.embedded.vector_nice
    pids = {worker.name: worker.process.pid for worker in stack.workers if worker.process}
    pids.update({service.name: service.process.pid for service in stack.services})
    for name in ("vector-sink", "milvus"):
        assert os.getpriority(os.PRIO_PROCESS, pids[name]) == nice, name
    for name in ("parse-0", "graph-sink", "falkordb", "tansu", "query"):
        assert os.getpriority(os.PRIO_PROCESS, pids[name]) == 0, name
    if Path("/proc/self/autogroup").exists():
        assert autogroup_nice(pids["vector-sink"]) == nice
        assert autogroup_nice(pids["milvus"]) == nice
        assert autogroup_nice(pids["graph-sink"]) == 0


def _jail_stats(parents: set[int]) -> Iterator[tuple[int, list[str]]]:
    """Each parse jail whose parent is one of ``parents``: its pid and the fields of its
    ``/proc`` stat after the command name."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"patchstream.parsing.jail_child" not in (entry / "cmdline").read_bytes():
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) in parents:
                yield int(entry.name), fields
        except OSError:
            continue


def _busy_jails(stack: Supervisor, cpu: dict[int, int]) -> list[int]:
    """Pids of this stack's parse jails that used CPU since the last look (``cpu`` keeps the
    last look). Other stacks' jails are left alone: killing them fails other tests' files."""
    busy = []
    for pid, fields in _jail_stats(_parse_workers(stack)):
        used = int(fields[11]) + int(fields[12])  # utime + stime, in ticks
        if cpu.get(pid, used) != used:
            busy.append(pid)
        cpu[pid] = used
    return busy


def _parse_workers(stack: Supervisor) -> set[int]:
    return {w.process.pid for w in stack.workers
            if w.name.startswith("parse") and w.process is not None}  # fmt: skip


def _jails(stack: Supervisor) -> set[int]:
    """Pids of this stack's parse jails (other stacks on the machine have theirs)."""
    return {pid for pid, _ in _jail_stats(_parse_workers(stack))}


def test_jails_grown_by_a_burst_are_replaced_once_the_workers_are_quiet(
    stack: Supervisor,
) -> None:
    """A burst of files grows each worker's jail; after ``sandbox_quiet_s`` of quiet a fresh
    jail replaces one that parsed ``sandbox_refresh_files`` or more, and parsing goes on."""
    refresh = stack.settings.parsing.sandbox_refresh_files
    workers = stack.settings.embedded.parse_workers
    # An earlier test's files may have a swap under way (fresh jail up, grown one not yet
    # closed): start from one jail a worker.
    wait_for(lambda: len(_jails(stack)) == workers, what="one jail a worker")
    before = _jails(stack)
    burst = [_event("acme", f"burst/m{i}.py", 1, content=f"def f{i}():\n    return {i}\n")
             for i in range(6 * refresh)]  # fmt: skip
    _publish(stack, burst)
    graph = open_graph_store(stack.settings)
    try:
        wait_for(lambda: all(graph.file_version("acme", "shop", "main", e.path) is not None
                             for e in burst[-5:]), what="the burst in the graph")  # fmt: skip
        # Each worker's jail parsed about half the burst: both are replaced.
        wait_for(lambda: not (_jails(stack) & before) and len(_jails(stack)) == len(before),
                 what="fresh jails in place of the grown ones")  # fmt: skip
        _publish(stack, [_event("acme", "burst/after.py", 1, content="def after():\n    pass\n")])
        wait_for(lambda: graph.file_version("acme", "shop", "main", "burst/after.py") is not None,
                 what="a file parsed by a fresh jail")  # fmt: skip
    finally:
        graph.close()


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_a_file_that_crashes_its_jail_is_flagged_and_the_stream_moves_on(
    stack: Supervisor, sig: signal.Signals
) -> None:
    """Parse jails are killed (SIGSEGV, SIGKILL) while they work: the file's two tries fail,
    it keeps its last good symbols flagged parse_failed, the DLQ says why, and the next file
    parses."""
    good = "def keep(x):\n    return x\n"
    where = f"jail-{sig.name}"
    _publish(stack, [_event("acme", f"{where}/big.py", 1, content=good)])
    graph = open_graph_store(stack.settings)
    try:
        wait_for(lambda: bool(graph.file_symbols("acme", "shop", "main", f"{where}/big.py")),
                 what="the good version")  # fmt: skip
        stop, cpu = threading.Event(), {}

        def kill_busy_jails() -> None:
            while not stop.is_set():
                for pid in _busy_jails(stack, cpu):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
                time.sleep(0.05)

        big = "".join(f"def f{i}(a):\n    return g(a, [x for x in a])\n\n" for i in range(3000))
        _busy_jails(stack, cpu)  # the idle jails' CPU so far
        killer = threading.Thread(target=kill_busy_jails, daemon=True)
        killer.start()
        try:
            _publish(stack, [_event("acme", f"{where}/big.py", 2, content=big)])

            def flagged() -> bool:
                state = graph.file_state("acme", "shop", "main", f"{where}/big.py")
                return state is not None and state.version == 2 and state.flags.parse_failed

            wait_for(flagged, what="the file flagged parse_failed")
        finally:
            stop.set()
            killer.join()
        names = {s.name for s in graph.file_symbols("acme", "shop", "main", f"{where}/big.py")}
        assert "keep" in names and "f1" not in names  # the last good structure stands
        _publish(stack, [_event("acme", f"{where}/next.py", 1, content=good)])
        wait_for(lambda: bool(graph.file_symbols("acme", "shop", "main", f"{where}/next.py")),
                 what="the next file, parsed by a fresh jail")  # fmt: skip
    finally:
        graph.close()
    letters = [
        letter
        for letter in asyncio.run(read_dead_letters(stack.settings.kafka))
        if letter.code == "parse_failed" and letter.key and where.encode() in letter.key
    ]
    assert len(letters) == 1 and letters[0].reason.count(sig.name) == 2, letters
    assert "then in a fresh jail" in letters[0].reason


REGISTRY = (
    "HANDLERS = {}\n\n\ndef register(name):\n    def keep(fn):\n        HANDLERS[name] = fn\n"
    "        return fn\n    return keep\n"
)
PRICES = (
    'from shop.registry import register\n\n\n@register("base")\ndef base(x):\n    return x * 2\n'
    '\n\n@register("sale")\ndef discounted(x):\n    return x - 1\n'
)
CHECKOUT = (
    "import shop.prices  # registers the handlers\nfrom shop.registry import HANDLERS\n\n\n"
    'def total(kind, x):\n    return HANDLERS[kind](x)\n\n\nif __name__ == "__main__":\n'
    '    total("base", 1)\n    total("sale", 2)\n'
)


def test_a_traced_run_adds_the_calls_no_static_name_shows_until_an_edit(
    stack: Supervisor, tmp_path: Path
) -> None:
    """Issue #34: ``patchstream trace`` stores the calls a run made through a registry dict
    as runtime edges; an edit of the callee's file drops them; a replay of the old trace is
    stale; a malformed trace event is dead-lettered with its reason."""
    import subprocess
    import sys

    from patchstream.schemas.graph import CallResolution
    from patchstream.schemas.traces import TraceEvent

    root = make_repo(
        tmp_path / "traced",
        {
            "shop/__init__.py": "",
            "shop/registry.py": REGISTRY,
            "shop/prices.py": PRICES,
            "shop/checkout.py": CHECKOUT,
        },
    )
    done = asyncio.run(index_directory(stack.settings, root, repo="traced", tenant="default",
                                       timeout_s=180, progress=False))  # fmt: skip
    assert done.complete
    # A client of the gateway and the query service only: the broker's address is a dead one.
    sections = stack.environment()
    env = {
        **sections,
        "PATCHSTREAM_KAFKA": json.dumps({"bootstrap": "127.0.0.1:1"}),
        "PATCHSTREAM_QUERY": json.dumps(
            {**json.loads(sections["PATCHSTREAM_QUERY"]), "api_key": "key-default"}
        ),
    }
    assert json.loads(sections["PATCHSTREAM_GATEWAY"])["url"]  # the CLI goes through it

    def trace(*extra: str) -> dict[str, object]:
        traced = subprocess.run(
            [sys.executable, "-m", "patchstream.cli.main", "trace", "--root", str(root),
             "--tenant", "default", "--json", *extra, "--", sys.executable, "-m", "shop.checkout"],
            env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert traced.returncode == 0, traced.stderr
        return json.loads(traced.stdout)  # type: ignore[no-any-return]

    summary = trace("--out", str(tmp_path / "trace.jsonl"))
    assert summary["graph"] == {"applied_files": 2, "files": 2, "kept": 5, "stale": 0,
                                "unknown": 0, "timed_out": False}  # fmt: skip
    total, base = "traced::shop/checkout.py::total", "traced::shop/prices.py::base"
    graph = open_graph_store(stack.settings)
    try:

        def callees(weakest: CallResolution) -> dict[str, str]:
            return {n.symbol.id: n.resolution
                    for n in graph.callees("default", total, 1, "main", weakest)}  # fmt: skip

        assert callees(CallResolution.EXACT) == {}  # no static name reaches them
        assert callees(CallResolution.RUNTIME) == {
            base: "runtime",
            "traced::shop/prices.py::discounted": "runtime",
        }
        callers = {n.symbol.id: n.resolution for n in graph.callers("default", base, 1)}
        assert callers[total] == "runtime"  # the default (inferred) includes runtime edges
        # An edit of the callee's file fences its runtime edges out.
        _publish(stack, [PatchEvent(tenant="default", repo="traced", path="shop/prices.py",
                                    op="upsert", content=PRICES + "\n\nTAX = 1\n",
                                    version=time.time_ns(), source="agent")])  # fmt: skip
        wait_for(lambda: callees(CallResolution.RUNTIME) == {}, what="the edit to drop them")
        # The old trace again: stale, nothing stored.
        old = [  # the same events under new ids, to tell their outcome from the first's
            TraceEvent.model_validate_json(line).model_copy(update={"event_id": f"replay{n}"})
            for n, line in enumerate((tmp_path / "trace.jsonl").read_text().splitlines())
        ]

        async def replay() -> None:
            async with EventPublisher(stack.settings.kafka) as publisher:
                await publisher.publish_traces(old)
                await publisher.producer.send_and_wait(
                    Topics.from_settings(stack.settings.kafka).trace_events, key=b"t1",
                    value=json.dumps({**json.loads(old[0].model_dump_json()),
                                      "path": "../../etc/passwd"}).encode())  # fmt: skip

        asyncio.run(replay())
        wait_for(
            lambda: (
                graph.trace_marks("default", "traced", "main", ["shop/checkout.py"])[
                    "shop/checkout.py"
                ].event_id
                == old[0].event_id
            ),
            what="the replay to be applied",
        )
        mark = graph.trace_marks("default", "traced", "main", ["shop/checkout.py"])
        assert (mark["shop/checkout.py"].kept, mark["shop/checkout.py"].stale) == (1, 2)
        assert callees(CallResolution.RUNTIME) == {}
        # Traced again at the new content (the agent's edit on disk too): back.
        (root / "shop/prices.py").write_text(PRICES + "\n\nTAX = 1\n")
        assert trace()["graph"]["kept"] == 5  # type: ignore[index]
        assert set(callees(CallResolution.RUNTIME)) == {base, "traced::shop/prices.py::discounted"}
    finally:
        graph.close()
    # The gateway refuses another tenant's events and a malformed one, with the reason.
    import httpx

    with httpx.Client(base_url=stack.settings.gateway.url, timeout=30,
                      headers={"Authorization": "Bearer dev-local-key"}) as gateway:  # fmt: skip
        event = json.loads(old[0].model_dump_json())
        other = gateway.post("/v1/traces", json={"events": [{**event, "tenant": "acme"}]})
        assert other.status_code == 403 and "tenant" in other.text
        bad = gateway.post("/v1/traces", json={"events": [{**event, "content_hash": "x"}]})
        assert bad.status_code == 422 and "events[0].content_hash" in bad.text
    letters = asyncio.run(read_dead_letters(stack.settings.kafka))
    refused = [d for d in letters if d.key == b"t1"]
    assert refused and refused[0].stage == "trace-sink" and "'..'" in refused[0].reason


def test_a_client_with_no_store_access_indexes_through_the_server(
    stack: Supervisor, tmp_path: Path
) -> None:
    """Issue #36: ``patchstream index`` with PATCHSTREAM_REMOTE runs as a client: its
    environment holds the gateway's and the query service's URLs and keys, an empty data
    dir and dead addresses for the broker and both stores. It uploads only what the server lacks (a
    re-index of an unchanged tree sends no file), deletes what the tree lost, and ``--base``
    makes a branch overlay that holds only what differs."""
    import subprocess
    import sys

    root = make_repo(tmp_path / "remote", {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n"
                                           for i in range(12)})  # fmt: skip
    sections = stack.environment()
    empty = tmp_path / "client-home"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env.update({
        "PATCHSTREAM_QUERY": json.dumps({"url": stack.settings.query.url,
                                         "api_key": "key-default"}),
        "PATCHSTREAM_GATEWAY": json.dumps({"url": stack.settings.gateway.url,
                                           "api_key": "dev-local-key"}),
        "PATCHSTREAM_KAFKA": json.dumps({"bootstrap": "127.0.0.1:1"}),
        "PATCHSTREAM_GRAPH": json.dumps({"falkordb_port": 1}),
        "PATCHSTREAM_VECTOR": json.dumps({"milvus_uri": "http://127.0.0.1:1"}),
        "PATCHSTREAM_EMBEDDED": json.dumps({"data_dir": str(empty)}),
        "PATCHSTREAM_REMOTE": "1",
    })  # fmt: skip
    assert "PATCHSTREAM_FALKORDB" not in env and sections["PATCHSTREAM_GATEWAY"]

    def index(*extra: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-m", "patchstream.cli.main", "index", str(root), "--repo", "remote",
             "--json", "--commits", "0", "--timeout", "180", *extra],
            env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    first = index()
    files = first["files_scanned"]  # the 12 modules and .gitignore
    assert (files, first["published"], first["complete"], first["tenant"]) == (
        13, 13, True, "default")  # fmt: skip
    graph = open_graph_store(stack.settings)
    try:
        assert len(graph.file_hashes("default", "remote", "main")) == 13
        again = index()
        assert (again["published"], again["unchanged"], again["complete"]) == (0, 13, True)
        (root / "pkg/m3.py").write_text("def f3():\n    return 'changed'\n")
        (root / "pkg/m5.py").unlink()
        changed = index()
        assert (changed["published"], changed["deleted"], changed["unchanged"]) == (2, 1, 11)
        held = graph.file_hashes("default", "remote", "main")
        assert "pkg/m5.py" not in held and len(held) == 12
        (root / "pkg/m7.py").write_text("def f7():\n    return 'on the branch'\n")
        branch = index("--ref", "feature", "--base", "main")
        assert (branch["published"], branch["complete"]) == (1, True)
        assert set(graph.file_hashes("default", "remote", "feature")) == {"pkg/m7.py"}
        refused = subprocess.run(
            [sys.executable, "-m", "patchstream.cli.main", "index", str(root), "--repo", "remote",
             "--ref", "other", "--base", "nosuchbase", "--json"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert refused.returncode != 0 and "is not indexed" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        graph.close()
    status = subprocess.run([sys.executable, "-m", "patchstream.cli.main", "status"], env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert status.returncode == 0, status.stdout + status.stderr
    assert [line.split()[0] for line in status.stdout.splitlines()] == ["query", "gateway"]
    assert list(empty.iterdir()) == []  # the client wrote nothing of a stack's


MIXED = {
    "app/main.py": "def launch_rocket():\n    return 3\n",
    "docs/guide.md": "# Guide\n\nHow to launch.\n",
    "src/engine.zig": "pub fn ignite_thrusters(level: u8) void {\n    _ = level;\n}\n",
    "scripts/boot.lua": "function warm_up_boilers()\n  return 1\nend\n",
    "config/flight.json": '{"orbit_altitude_km": 408}\n',
    "Makefile": "all:\n\tzig build\n",
    # C++: the class in its header, a method defined out of its class's file, a field of it.
    "nav/guidance.h": "namespace nav {\nclass Gyro {\n public:\n  int drift() const;\n};\n"
    "class Guidance {\n public:\n  int correct_course();\n private:\n  Gyro* gyro_;\n};\n}\n",
    "nav/guidance.cc": '#include "guidance.h"\nnamespace nav {\nint Gyro::drift() const '
    "{ return 2; }\nint Guidance::correct_course() { return gyro_->drift(); }\n}\n",
    # C#: a class of another file's namespace, reached through ``using``, an extension
    # method and a base class's constructor.
    "Ground/Telemetry.cs": "namespace Ground.Link;\npublic class Radio {\n"
    "    public int Send(string frame) => frame.Length;\n}\npublic static class RadioExtensions {\n"
    '    public static int Ping(this Radio radio) => radio.Send("ping");\n}\n',
    "Ground/Station.cs": "using Ground.Link;\nnamespace Ground {\n"
    "    public class Base { }\n    public class Station : Base {\n"
    "        readonly Radio radio = new Radio();\n"
    '        public int Check() => radio.Ping() + radio.Send("status");\n    }\n}\n',
    # Kotlin: another package's class through an import, a companion object's function.
    "android/src/dock/Beacon.kt": "package dock\n\nclass Beacon(val id: Int) {\n"
    "    fun blink(): Int = id * 2\n\n    companion object {\n"
    "        fun first(): Beacon = Beacon(1)\n    }\n}\n",
    "android/src/app/Panel.kt": "package app\n\nimport dock.Beacon\n\n"
    "fun light(): Int {\n    val beacon: Beacon = Beacon.first()\n    return beacon.blink()\n}\n",
    # Scala: a class of another package through a selector import, built with ``new``.
    "jobs/src/etl/Loader.scala": "package etl\n\nclass Loader(path: String) {\n"
    "  def rows(): Int = path.length\n}\n",
    "jobs/src/etl/job/Nightly.scala": "package etl.job\n\nimport etl.{Loader}\n\n"
    'object Nightly {\n  def run(): Int = {\n    val loader: Loader = new Loader("x")\n'
    "    loader.rows()\n  }\n}\n",
    # PHP: a class of another namespace through ``use``, typed by a docblock.
    "web/src/Cart/Pricing.php": "<?php\nnamespace Shop\\Cart;\n\nclass Pricing\n{\n"
    "    public function quote(int $qty): int { return $qty * 3; }\n}\n",
    "web/src/Http/Checkout.php": "<?php\nnamespace Shop\\Http;\n\nuse Shop\\Cart\\Pricing;\n\n"
    "class Checkout\n{\n    /** @param Pricing $pricing */\n"
    "    public function total($pricing): int { return $pricing->quote(2); }\n}\n",
    # Ruby: a constant looked up from where it is written, a local built with ``new``.
    "lib/fleet/engine.rb": "module Fleet\n  class Engine\n    def spin(rate)\n"
    "      rate * 2\n    end\n  end\nend\n",
    "lib/fleet/dock.rb": 'require_relative "engine"\n\nmodule Fleet\n  class Dock\n'
    "    def launch\n      engine = Engine.new\n      engine.spin(3)\n    end\n  end\nend\n",
    # Swift: a type of another file of the module (no import), through an initializer.
    "ios/Sources/Radar/Sweep.swift": "struct Sweep {\n    func ping(_ range: Int) -> Int {\n"
    "        range * 2\n    }\n}\n",
    "ios/Sources/Radar/Console.swift": "final class Console {\n    func scan() -> Int {\n"
    "        let sweep = Sweep()\n        return sweep.ping(3)\n    }\n}\n",
}


def test_every_file_of_a_mixed_repository_is_parsed_or_said(
    stack: Supervisor, tmp_path: Path
) -> None:
    """Issue #56, nothing silent: a file of a language with no grammar here is counted by
    extension in ``index``'s summary, in ``query freshness`` and in ``status``, and its text
    is found by search; the parsed files have their symbols."""
    import subprocess
    import sys

    import httpx

    root = make_repo(tmp_path / "mixed", MIXED)
    env = {**stack.environment(), "PATCHSTREAM_LOG_LEVEL": "WARNING"}
    query = {**json.loads(env["PATCHSTREAM_QUERY"]), "api_key": "key-default"}
    env["PATCHSTREAM_QUERY"] = json.dumps(query)  # the reads: a key of the tenant indexed

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "patchstream.cli.main", *args], env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    said = cli("index", str(root), "--repo", "mixed", "--tenant", "default", "--commits", "0")
    # .gitignore and ignored/ come with make_repo: the ignored file is not a file of the tree.
    words = "no grammar (text searchable, no symbols): "
    assert f"{words}.gitignore 1, .json 1, .lua 1, .zig 1, Makefile 1" in said, said
    summary = json.loads(cli("index", str(root), "--repo", "mixed", "--tenant", "default",
                             "--commits", "0", "--json"))  # fmt: skip
    assert summary["unparsed"] == {".gitignore": 1, ".json": 1, ".lua": 1, ".zig": 1,
                                   "Makefile": 1}  # fmt: skip
    headers = {"Authorization": "Bearer key-default"}
    url = stack.settings.query.url
    fresh = httpx.get(f"{url}/v1/freshness", params={"repo": "mixed"}, headers=headers,
                      timeout=60).json()  # fmt: skip
    assert fresh["unparsed"] == summary["unparsed"], fresh
    # Held whole as text: counted apart, never among the files held in part.
    assert "no_grammar" not in fresh["flagged"] and fresh["flagged_files"] == [], fresh
    for words_in_it, path in (("ignite thrusters", "src/engine.zig"),
                              ("warm up boilers", "scripts/boot.lua"),
                              ("orbit altitude km", "config/flight.json")):  # fmt: skip
        hits = httpx.post(f"{url}/v1/search", json={"query": words_in_it, "repo": "mixed"},
                          headers=headers, timeout=60).json()["hits"]  # fmt: skip
        assert hits and hits[0]["path"] == path, (words_in_it, hits[:3])
    symbol = httpx.get(f"{url}/v1/symbols/mixed::app/main.py::launch_rocket", headers=headers,
                       timeout=60)  # fmt: skip
    assert symbol.status_code == 200 and symbol.json()["kind"] == "function"
    # C++ end to end: who calls Gyro::drift (defined out of its class's file) is found
    # through the field gyro_ that the header declares.
    callers = httpx.get(f"{url}/v1/symbols/mixed::nav/guidance.cc::nav.Gyro.drift/callers",
                        headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert [c["qualified_name"] for c in callers] == ["nav.Guidance.correct_course"], callers
    # C# end to end: the extension method's callers (through ``using``), and what it calls.
    sent = httpx.get(f"{url}/v1/symbols/mixed::Ground/Telemetry.cs::Ground.Link.Radio.Send/callers",
                     headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert sorted(c["qualified_name"] for c in sent) == [
        "Ground.Link.RadioExtensions.Ping", "Ground.Station.Check"], sent  # fmt: skip
    pinged = httpx.get(
        f"{url}/v1/symbols/mixed::Ground/Telemetry.cs::Ground.Link.RadioExtensions.Ping/callers",
        headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert [c["qualified_name"] for c in pinged] == ["Ground.Station.Check"], pinged
    # Kotlin end to end: a method of another package's class, called through a declared type.
    blinked = httpx.get(f"{url}/v1/symbols/mixed::android/src/dock/Beacon.kt::Beacon.blink/callers",
                        headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert [c["qualified_name"] for c in blinked] == ["light"], blinked
    # Scala end to end: a method of another package's class, through a declared type.
    rows = httpx.get(f"{url}/v1/symbols/mixed::jobs/src/etl/Loader.scala::Loader.rows/callers",
                     headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert [c["qualified_name"] for c in rows] == ["Nightly.run"], rows
    # PHP and Ruby end to end: a method of another file's class, through a docblock's type
    # and through what ``new`` built.
    quoted = httpx.get(
        f"{url}/v1/symbols/mixed::web/src/Cart/Pricing.php::Pricing.quote/callers",
        headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert [c["qualified_name"] for c in quoted] == ["Checkout.total"], quoted
    spun = httpx.get(f"{url}/v1/symbols/mixed::lib/fleet/engine.rb::Fleet.Engine.spin/callers",
                     headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert [c["qualified_name"] for c in spun] == ["Fleet.Dock.launch"], spun
    pinged = httpx.get(f"{url}/v1/symbols/mixed::ios/Sources/Radar/Sweep.swift::Sweep.ping/callers",
                       headers=headers, timeout=60).json()["callers"]  # fmt: skip
    assert [c["qualified_name"] for c in pinged] == ["Console.scan"], pinged
    listed = "no grammar (text searchable, no symbols): .gitignore 1, .json 1, .lua 1, .zig 1"
    freshness = cli("query", "freshness", "mixed").splitlines()
    assert freshness[-2:] == ["flagged none", f"unparsed: {listed}, Makefile 1"], freshness
    status = cli("status")  # the key's tenant, every repository
    assert ".zig 1" in status and "no grammar" in status, status
