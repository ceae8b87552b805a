"""A batch of patch events through the parse stage, with the previous states it needs.

The Faust agent hands over a batch; this module finds each file's previous state (the
worker's LRU first, then one query for the whole batch to learn which files the graph holds at
all, then a full read only for those), parses the events in delivery order and returns one
outcome per event. Events of one file in one batch see each other's results.

A redelivered event at exactly the version this worker (or the graph) holds is not simply
stale: its deltas may have been lost with a memory-only broker before one tier applied them
(the outbox then replays the event), and the graph being at that version says nothing about
the vector tier. Such an event is parsed again and sent as a complete state (base: nothing);
a tier that has it drops it at its version fence, a tier that lost it applies it. Only older
versions are stale.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from patchstream.errors import StoreRefused, StoreUnavailable
from patchstream.schemas.discussions import page_key
from patchstream.schemas.events import PatchEvent, view_ref
from patchstream.schemas.state import FileState
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.graph.keys import scope_of
from patchstream.streams.parse_stage import ParseOutput, ParseStage


class PreviousStates:
    """Recent files' states in memory; the graph store's view of a file on a miss.

    States are kept encoded, bounded by count and by bytes: as objects a scipy file's state
    took ~450 KiB (symbols, edges and chunks as models), encoded a tenth of that, and one
    generated file can outweigh hundreds of ordinary ones. A hit decodes (~1-2 ms); a miss
    costs a graph read, as for any file not seen lately."""

    def __init__(self, graph: GraphStore, capacity: int, max_bytes: int = 32 << 20) -> None:
        self.graph = graph
        self.capacity = max(1, capacity)
        self.max_bytes = max_bytes
        self.recent: OrderedDict[str, bytes | None] = OrderedDict()
        self.held_bytes = 0

    def get(self, event: PatchEvent, absent: frozenset[str] = frozenset()) -> FileState | None:
        if event.key in self.recent:
            self.recent.move_to_end(event.key)
            kept = self.recent[event.key]
            return None if kept is None else FileState.model_validate_json(kept)
        if event.key in absent:
            return None
        return self.graph.file_state(
            event.tenant, event.repo, event.ref, event.path, event.workspace
        )

    def put(self, event: PatchEvent, state: FileState | None) -> None:
        self._drop(event.key)
        encoded = None if state is None else state.model_dump_json().encode("utf-8")
        if encoded is not None and len(encoded) > self.max_bytes:
            return  # a miss reads it from the graph
        self.recent[event.key] = encoded
        self.held_bytes += len(encoded or b"")
        while len(self.recent) > self.capacity or self.held_bytes > self.max_bytes:
            _, oldest = self.recent.popitem(last=False)
            self.held_bytes -= len(oldest or b"")

    def _drop(self, key: str) -> None:
        if key in self.recent:
            self.held_bytes -= len(self.recent.pop(key) or b"")

    def absent(self, events: Sequence[PatchEvent]) -> frozenset[str]:
        """Keys of events whose file the graph does not hold (one query per tenant)."""
        by_tenant: dict[str, dict[str, str]] = defaultdict(dict)
        for event in events:
            if event.key not in self.recent:
                scope = scope_of(event.tenant, event.repo, event.ref, event.workspace)
                by_tenant[event.tenant][f"{scope}|{event.path}"] = event.key
        missing: set[str] = set()
        for tenant, keys in by_tenant.items():
            held = self.graph.live_files(tenant, list(keys))
            missing.update(key for fuid, key in keys.items() if fuid not in held)
        return frozenset(missing)


@dataclass
class Outcome:
    """What one event came to: an output, or the error that sends it to the DLQ."""

    output: ParseOutput | None = None
    error: Exception | None = None
    seconds: float = 0.0


def parse_batch(
    stage: ParseStage, states: PreviousStates, events: Sequence[PatchEvent]
) -> list[Outcome]:
    """Every event parsed in order; a failure is that event's outcome, never the batch's.

    The store is read first, for the whole batch, before anything changes: a store that is
    not answering raises ``StoreUnavailable`` out of here with the worker's state untouched,
    so the caller can wait and run the same batch again (never a dead letter for an outage).
    """
    try:
        absent = states.absent(events)
    except StoreRefused:  # the batch query was refused: fall back to one read per file
        absent = frozenset()
    previous: dict[str, FileState | None] = {}
    unreadable: dict[str, Exception] = {}
    for event in events:
        if event.key in previous or event.key in unreadable:
            continue
        try:
            previous[event.key] = states.get(event, absent)
        except StoreUnavailable:
            raise
        except Exception as exc:  # this file's stored state cannot be read: its events fail
            unreadable[event.key] = exc
    notes = _notes_of_deleted_threads(states.graph, events)
    outcomes = []
    for event in events:
        started = time.perf_counter()
        if event.key in unreadable:
            outcomes.append(Outcome(error=unreadable[event.key]))
            continue
        before = previous[event.key]
        try:
            if before is not None and before.version == event.version:
                output = stage.resend(event, before)  # see the module docstring
            else:
                output = stage.handle(event, before)
        except Exception as exc:  # a pathological file must not stop the batch
            outcomes.append(Outcome(error=exc, seconds=time.perf_counter() - started))
            continue
        if not output.stale:
            previous[event.key] = output.state
            states.put(event, output.state)
            output.events += [note_deleted(event, path, at)
                              for at, path in enumerate(notes.get(event.event_id, []))]  # fmt: skip
        outcomes.append(Outcome(output=output, seconds=time.perf_counter() - started))
    return outcomes


def _notes_of_deleted_threads(
    graph: GraphStore, events: Sequence[PatchEvent]
) -> dict[str, list[str]]:
    """Event id -> the notes on the thread it deletes (an issue, a PR/MR page), read before
    anything changes. GitHub sends no event for the comments of a deleted issue: without
    this they would stay searchable forever."""
    found: dict[str, list[str]] = {}
    for event in events:
        key = page_key(event.path) if event.op == "delete" else None
        if key is None or key[2]:
            continue
        kind, number, _ = key
        try:
            found[event.event_id] = graph.thread_notes(
                event.tenant, event.repo, view_ref(event.ref, event.workspace), f"{kind}-{number}"
            )
        except StoreRefused:  # the thread still goes; its notes wait for their own deletes
            continue
    return found


def note_deleted(event: PatchEvent, path: str, at: int) -> PatchEvent:
    """A delete of ``path`` that follows ``event``'s (at its version: any note is older)."""
    return event.model_copy(update={
        "event_id": f"{event.event_id}:note-{at}", "path": path, "old_path": None,
        "content": None, "blob": None, "content_hash": None, "edit": None,
    })  # fmt: skip


async def parse_until_the_store_answers(
    stage: ParseStage,
    states: PreviousStates,
    events: Sequence[PatchEvent],
    *,
    backoff_s: float,
    max_backoff_s: float = 30.0,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    on_retry: Callable[[int, float, StoreUnavailable], None] | None = None,
) -> list[Outcome]:
    """``parse_batch`` in a thread (parsing and store reads block; the loop keeps its
    heartbeats and commits), run again with capped exponential backoff for as long as the
    graph store is not answering, like the sinks do: an outage is never a dead letter."""
    attempt = 0
    while True:
        try:
            return await asyncio.to_thread(parse_batch, stage, states, events)
        except StoreUnavailable as exc:
            delay = min(max_backoff_s, backoff_s * 2**attempt)
            attempt += 1
            if on_retry is not None:
                on_retry(attempt, delay, exc)
            await sleep(delay)
