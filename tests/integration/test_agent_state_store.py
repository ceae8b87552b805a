"""The agent state store on a real graph database: compare-and-set under concurrent writers,
events in the same transaction as their snapshot, publication marks, expiry."""

from __future__ import annotations

import threading
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstream.agent import runs
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.state.base import NewEvent, StoredDoc
from patchstream.stores.state.cypher import CypherAgentStateStore


def _store(graph: CypherGraphStore) -> CypherAgentStateStore:
    return CypherAgentStateStore(graph)


def test_create_is_refused_for_an_existing_id(graph: CypherGraphStore, tenant: str) -> None:
    store = _store(graph)
    doc = StoredDoc("r1", 1, '{"a": 1}')
    assert store.create(tenant, "Run", "r1", doc, {"status": "CREATED"}, [NewEvent(1, "{}")])
    assert not store.create(tenant, "Run", "r1", StoredDoc("r1", 1, '{"a": 2}'), {}, [])
    assert store.get(tenant, "Run", "r1") == doc
    assert store.get(tenant, "Run", "nope") is None
    assert store.get(f"{tenant}x", "Run", "r1") is None  # another tenant sees nothing


def test_a_stale_replace_writes_nothing(graph: CypherGraphStore, tenant: str) -> None:
    store = _store(graph)
    store.create(tenant, "Run", "r1", StoredDoc("r1", 1, "v1"), {}, [NewEvent(1, "e1")])
    assert store.replace(
        tenant,
        "Run",
        "r1",
        1,
        StoredDoc("r1", 3, "v3"),
        {"status": "RUNNING"},
        [NewEvent(2, "e2"), NewEvent(3, "e3")],
    )
    assert not store.replace(
        tenant, "Run", "r1", 1, StoredDoc("r1", 2, "lost"), {}, [NewEvent(2, "lost")]
    )
    assert store.get(tenant, "Run", "r1") == StoredDoc("r1", 3, "v3")
    assert store.events(tenant, "r1", 0, 100) == ["e1", "e2", "e3"]
    assert store.events(tenant, "r1", 2, 100) == ["e3"]
    assert [d.doc_id for d in store.find(tenant, "Run", {"status": "RUNNING"}, 10)] == ["r1"]
    assert store.find(tenant, "Run", {"status": "FAILED"}, 10) == []


def test_concurrent_writers_never_lose_an_update(graph: CypherGraphStore, tenant: str) -> None:
    """Eight threads each add 15 observations by read, modify, compare-and-set, retrying on a
    conflict: every observation is in the final snapshot and in the event log, once."""
    store = _store(graph)
    created = runs.created_event(tenant, "r1", runs.RunCreate(goal="g"), 1.0, None)
    run, events = runs.stamp(
        runs.apply(None, created), [runs.EventIn(type="RunStarted")], 1.0, None
    )
    events = [created, *events]
    store.create(
        tenant,
        "Run",
        "r1",
        StoredDoc("r1", run.state_version, run.model_dump_json()),
        {},
        [NewEvent(e.seq, e.model_dump_json()) for e in events],
    )
    conflicts = []

    def writer(name: str) -> None:
        for i in range(15):
            while True:
                held = store.get(tenant, "Run", "r1")
                assert held is not None
                current = runs.Run.model_validate_json(held.doc)
                text = f"{name}-{i}"
                new, stamped = runs.stamp(
                    current, [runs.EventIn(type="ObservationRecorded", text=text)], 2.0, name
                )
                doc = StoredDoc("r1", new.state_version, new.model_dump_json())
                if store.replace(
                    tenant,
                    "Run",
                    "r1",
                    held.version,
                    doc,
                    {},
                    [NewEvent(e.seq, e.model_dump_json()) for e in stamped],
                ):
                    break
                conflicts.append(name)

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = store.get(tenant, "Run", "r1")
    assert held is not None and held.version == 2 + 8 * 15
    log = [runs.RunEvent.model_validate_json(e) for e in store.events(tenant, "r1", 0, 1000)]
    assert [e.seq for e in log] == list(range(1, 2 + 8 * 15 + 1))  # no gap, no duplicate
    texts = [e.text for e in log if e.type == "ObservationRecorded"]
    assert sorted(texts) == sorted(f"w{n}-{i}" for n in range(8) for i in range(15))
    assert conflicts  # the writers did race; the compare-and-set is what kept every update
    assert runs.rebuild(log) == runs.Run.model_validate_json(held.doc)


def test_publication_marks_and_expiry(graph: CypherGraphStore, tenant: str) -> None:
    store = _store(graph)
    store.create(
        tenant, "Run", "r1", StoredDoc("r1", 2, "v"), {}, [NewEvent(1, "e1"), NewEvent(2, "e2")]
    )
    pending = store.unpublished(tenant, 10)
    assert [doc for _uid, doc in pending] == ["e1", "e2"]
    store.mark_published(tenant, [pending[0][0]])
    assert [doc for _uid, doc in store.unpublished(tenant, 10)] == ["e2"]
    store.create(tenant, "Session", "s-old", StoredDoc("s-old", 1, "{}"), {"expires_at": 10.0}, [])
    store.create(tenant, "Session", "s-new", StoredDoc("s-new", 1, "{}"), {"expires_at": 99.0}, [])
    assert store.expired(tenant, "Session", now=50.0, limit=10) == ["s-old"]
    assert store.delete(tenant, "Session", ["s-old"]) == 1
    assert store.get(tenant, "Session", "s-old") is None
    assert store.get(tenant, "Session", "s-new") is not None


def test_sessions_expire_after_their_ttl_and_start_anew(
    graph: CypherGraphStore, tenant: str
) -> None:
    from patchstream.agent import sessions
    from patchstream.agent.service import AgentStateService, NotFound

    now = [100.0]
    service = AgentStateService(_store(graph), graph, session_ttl_s=10, clock=lambda: now[0])
    item = sessions.ScratchItem(item_id="i1", text="find the bug")
    service.update_session(tenant, "s1", lambda s: sessions.note(s, item))
    now[0] = 109.0
    assert [i.text for i in service.get_session(tenant, "s1").scratchpad] == ["find the bug"]
    service.update_session(tenant, "s1", lambda s: s)  # a write renews the time to live
    now[0] = 118.0
    assert service.get_session(tenant, "s1").expires_at == 119.0
    now[0] = 130.0
    with pytest.raises(NotFound):
        service.get_session(tenant, "s1")
    fresh = service.update_session(tenant, "s1", lambda s: s)
    assert fresh.scratchpad == [] and fresh.created_at == 130.0
    now[0] = 200.0
    assert service.expire_sessions(tenant) == 1


def test_run_events_reach_the_bus_after_the_fact_and_never_block_a_write(
    graph: CypherGraphStore, tenant: str, tansu_service: object
) -> None:
    """With the broker unreachable the write is stored and its events wait unpublished; a
    relay that reaches a broker sends them, in order, and marks them."""
    import asyncio
    import json
    import time

    from aiokafka import AIOKafkaConsumer

    from patchstream.agent.relay import RunEventRelay
    from patchstream.agent.service import AgentStateService
    from patchstream.bus.producer import make_producer
    from patchstream.bus.topics import ensure_topics
    from patchstream.config.settings import KafkaSettings
    from patchstream.embedded.services import Service, free_port

    service = AgentStateService(_store(graph), graph)
    run = service.create_run(tenant, runs.RunCreate(goal="g"))
    service.append(tenant, run.run_id, 1, [runs.EventIn(type="RunStarted")])
    down = KafkaSettings(bootstrap=f"127.0.0.1:{free_port()}", request_timeout_ms=2000)

    async def offline() -> float:
        relay = RunEventRelay(lambda: service, lambda: make_producer(down), "run-events")
        started = time.monotonic()
        relay.soon(tenant)  # what a write does: returns at once
        elapsed = time.monotonic() - started
        assert await relay.drain(tenant) == 0  # the broker is down: nothing sent
        await relay.close()
        return elapsed

    assert asyncio.run(offline()) < 0.1
    assert [e.seq for _, e in service.unpublished(tenant)] == [1, 2]

    assert isinstance(tansu_service, Service)
    up = KafkaSettings(bootstrap=f"127.0.0.1:{tansu_service.port}", topic_prefix=f"{tenant}.")
    topic = f"{tenant}.run-events"

    async def online() -> list[int]:
        await ensure_topics(up)
        relay = RunEventRelay(lambda: service, lambda: make_producer(up), topic)
        assert await relay.drain(tenant) == 2
        await relay.close()
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=up.bootstrap, auto_offset_reset="earliest", group_id=None
        )
        await consumer.start()
        try:
            batch = await consumer.getmany(timeout_ms=10_000)
        finally:
            await consumer.stop()
        return [json.loads(r.value or b"{}")["seq"] for rs in batch.values() for r in rs]

    assert asyncio.run(online()) == [1, 2]
    assert service.unpublished(tenant) == []


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(schedule=st.lists(st.integers(0, 2), min_size=1, max_size=40))
def test_any_interleaving_of_writers_loses_no_update(
    graph: CypherGraphStore, tenant: str, schedule: list[int]
) -> None:
    """Three writers (a worker, a callback, a human) each read, then later compare-and-set;
    hypothesis picks who moves when. Whatever the interleaving, every write that was told it
    landed is in the log and the snapshot, and every refused one changed nothing."""
    store = _store(graph)
    run_id = f"r{uuid.uuid4().hex[:8]}"
    created = runs.created_event(tenant, run_id, runs.RunCreate(goal="g"), 1.0, None)
    run, started = runs.stamp(
        runs.apply(None, created), [runs.EventIn(type="RunStarted")], 1.0, None
    )
    store.create(
        tenant,
        "Run",
        run_id,
        StoredDoc(run_id, run.state_version, run.model_dump_json()),
        {},
        [NewEvent(e.seq, e.model_dump_json()) for e in [created, *started]],
    )
    held: dict[int, StoredDoc | None] = {0: None, 1: None, 2: None}
    landed: list[str] = []
    for step, writer in enumerate(schedule):
        if held[writer] is None:  # this writer's next move: read
            held[writer] = store.get(tenant, "Run", run_id)
            continue
        read = held[writer]
        assert read is not None
        text = f"w{writer}-{step}"
        new, stamped = runs.stamp(
            runs.Run.model_validate_json(read.doc),
            [runs.EventIn(type="ObservationRecorded", text=text)],
            2.0,
            None,
        )
        ok = store.replace(
            tenant,
            "Run",
            run_id,
            read.version,
            StoredDoc(run_id, new.state_version, new.model_dump_json()),
            {},
            [NewEvent(e.seq, e.model_dump_json()) for e in stamped],
        )
        now = store.get(tenant, "Run", run_id)
        assert now is not None
        assert ok == (read.version + 1 == now.version and text in now.doc)
        if ok:
            landed.append(text)
        held[writer] = None
    final = store.get(tenant, "Run", run_id)
    assert final is not None and final.version == 2 + len(landed)
    log = [runs.RunEvent.model_validate_json(e) for e in store.events(tenant, run_id, 0, 1000)]
    assert [e.text for e in log if e.type == "ObservationRecorded"] == landed
    assert runs.rebuild(log) == runs.Run.model_validate_json(final.doc)
