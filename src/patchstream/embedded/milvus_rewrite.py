"""Milvus Lite's delete log kept short: at start, before anyone can connect, a collection
with too many delta files is rewritten into a fresh one that holds the same live rows.

Milvus Lite 3.x writes each flushed batch of deletes (an upsert is a delete and an insert)
as a parquet delta file per partition, and drops a delta file only once every data file of
the collection is newer than it. One row nobody edits pins every later delta file, so a store
that sees edits for days keeps them all, and each start reads them all before it answers:
the restart soak's chunks collection held 3,978 of them after 58 rounds and took 7.4 s to
open on a quiet machine (of 9.5 s in all) and minutes beside a stack starting up. Its own
compaction merges data files and keeps their sequence numbers, so it never frees them.

A rewrite copies the live rows (in primary-key order, in batches, function outputs such as
BM25's sparse vectors left to be computed again) into ``<name>__ps_rewrite``, flushes it,
checks the count, and swaps the two by directory renames. A marker file names the rewrites
that were complete, so a start after a kill at any step finishes the swap or drops the
partial copy: the old collection is never removed before its copy is whole.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

REWRITE_SUFFIX = "__ps_rewrite"
OLD_SUFFIX = "__ps_old"
MARKER = "patchstream-rewrites.json"
DELTA_FILES_BOUND = 256  # about 0.5 s of every start
# A delta file costs a start about 2 ms to read (3,978 in 7.4 s, quiet); a row costs the
# rewrite 0.3-4 ms (quiet, and beside a starting stack). A big collection is rewritten only
# once its log costs each start about as much as the copy costs once.
ROWS_PER_DELTA_FILE = 4
BATCH_ROWS = 2_000


@dataclass(frozen=True)
class Rewrite:
    collection: str
    delta_files: int
    rows: int
    seconds: float


def delta_file_count(collection_dir: Path) -> int:
    """The delta files a collection's manifest lists, over all of its partitions."""
    try:
        manifest = json.loads((collection_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return 0
    partitions = manifest.get("partitions", {})
    return sum(len(p.get("delta_files", [])) for p in partitions.values())


def needs_rewrite(delta_files: int, rows: int, bound: int = DELTA_FILES_BOUND) -> bool:
    """Past ``bound`` delta files (0: never), and past a quarter of its rows."""
    return bound > 0 and delta_files > max(bound, rows // ROWS_PER_DELTA_FILE)


def compact_delete_logs(db: Any, data_dir: Path, bound: int = DELTA_FILES_BOUND) -> list[Rewrite]:
    """Finish an interrupted rewrite, then rewrite each collection that
    :func:`needs_rewrite`. ``db`` is an open ``milvus_lite.db.MilvusLite`` nobody else uses
    yet."""
    finish_interrupted(db, data_dir)
    if bound <= 0:
        return []
    done = []
    for name in sorted(db.list_collections()):
        count = delta_file_count(_collection_dir(db, name))
        if count <= bound:
            continue
        try:
            if needs_rewrite(count, db.get_collection(name).num_entities, bound):
                done.append(rewrite(db, data_dir, name, count))
        except Exception as exc:  # the store still opens as it was: a slower start, no loss
            log.warning("event=milvus_rewrite_skipped collection=%s error=%s: %s", name,
                        type(exc).__name__, str(exc)[:300])  # fmt: skip
            if name not in _marked(data_dir):
                _remove(db, name + REWRITE_SUFFIX)
    return done


def rewrite(db: Any, data_dir: Path, name: str, delta_files: int) -> Rewrite:
    started = time.perf_counter()
    source = db.get_collection(name)
    source.load()  # queries need it (it reads the persisted indexes back)
    schema = source.schema
    target_name = name + REWRITE_SUFFIX
    db.drop_collection(target_name)  # a copy a kill left before its marker: start again
    target = db.create_collection(target_name, copy.deepcopy(schema))
    for field_name in source.list_indexes():
        info = source.get_index_info(field_name)
        if info:
            target.create_index(field_name, _index_params(info))
    computed = {f.name for f in schema.fields if f.is_function_output}
    fields = [f.name for f in schema.fields if f.name not in computed]
    pk = source.pk_field
    copied, last = 0, None
    while True:
        expr = None if last is None else f"{pk} > {json.dumps(last)}"
        rows = source.query(expr, output_fields=fields, limit=BATCH_ROWS, order_by_pk=True)
        if not rows:
            break
        target.insert([{k: v for k, v in row.items() if k not in computed} for row in rows])
        copied += len(rows)
        last = rows[-1][pk]
    target.flush()
    # num_entities: live rows in the flushed files and the memtable (count() is the memtable's)
    expected, held = source.num_entities, target.num_entities
    if not expected == held == copied:
        raise RuntimeError(f"rewrite of {name}: {copied} rows read, {held} held, of {expected}")
    _mark(data_dir, name)
    _swap(db, name)
    _unmark(data_dir, name)
    result = Rewrite(name, delta_files, copied, time.perf_counter() - started)
    log.info("event=milvus_rewrite collection=%s delta_files=%d rows=%d seconds=%.2f",
             name, delta_files, copied, result.seconds)  # fmt: skip
    return result


def finish_interrupted(db: Any, data_dir: Path) -> None:
    """A kill mid-rewrite: a marked copy is whole, so its swap is finished; an unmarked one
    is dropped; an old collection left behind by a swap is removed."""
    for name in _marked(data_dir):
        if db.has_collection(name + REWRITE_SUFFIX):
            _swap(db, name)
        _unmark(data_dir, name)
    for name in list(db.list_collections()):
        if name.endswith((OLD_SUFFIX, REWRITE_SUFFIX)):
            _remove(db, name)


def _swap(db: Any, name: str) -> None:
    if db.has_collection(name):
        db.drop_collection(name + OLD_SUFFIX)
        db.rename_collection(name, name + OLD_SUFFIX)
    db.rename_collection(name + REWRITE_SUFFIX, name)
    _remove(db, name + OLD_SUFFIX)


def _remove(db: Any, name: str) -> None:
    """Drop a collection, or remove what a kill during an earlier drop left of it."""
    try:
        db.drop_collection(name)
    except (OSError, ValueError, RuntimeError):
        shutil.rmtree(_collection_dir(db, name), ignore_errors=True)


def _index_params(info: dict[str, Any]) -> dict[str, Any]:
    return {
        "index_type": info.get("index_type"),
        "metric_type": info.get("metric_type"),
        "params": info.get("build_params") or info.get("params") or {},
        "search_params": info.get("search_params") or {},
    }


def _collection_dir(db: Any, name: str) -> Path:
    return Path(db._collection_dir(name))


def _marker(data_dir: Path) -> Path:
    return data_dir / MARKER


def _marked(data_dir: Path) -> list[str]:
    try:
        names = json.loads(_marker(data_dir).read_text())
    except (OSError, ValueError):
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _write_marker(data_dir: Path, names: list[str]) -> None:
    path = _marker(data_dir)
    if not names:
        path.unlink(missing_ok=True)
        return
    staged = path.with_suffix(".tmp")
    with staged.open("w") as out:
        json.dump(sorted(set(names)), out)
        out.flush()
        os.fsync(out.fileno())
    staged.replace(path)


def _mark(data_dir: Path, name: str) -> None:
    _write_marker(data_dir, [*_marked(data_dir), name])


def _unmark(data_dir: Path, name: str) -> None:
    _write_marker(data_dir, [n for n in _marked(data_dir) if n != name])
