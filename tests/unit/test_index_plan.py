"""What an index publishes (``indexing.plan``, shared by the local and the remote index) and
how the remote one cuts its uploads (``indexing.remote.batches``)."""

from __future__ import annotations

from pathlib import Path

from patchstream.indexing.plan import PlannedWrite, plan_index
from patchstream.indexing.remote import MAX_WRITES, batches
from patchstream.parsing.hashing import hash_bytes
from patchstream.producers.tree_scan import ScanResult
from patchstream.stores.overlays import held_by_both


def _tree(root: Path, files: dict[str, str]) -> ScanResult:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return ScanResult(files=sorted(files))


def test_only_what_the_stores_do_not_both_hold_is_written_and_what_they_lack_is_deleted(
    tmp_path: Path,
) -> None:
    scan = _tree(tmp_path, {"a.py": "A = 1\n", "b.py": "B = 2\n", "c.py": "C = 3\n"})
    same, old = hash_bytes(b"A = 1\n"), hash_bytes(b"B = 1\n")
    # a.py held by both at its content; b.py held at an older content; c.py by one tier only;
    # gone.py held but no longer in the directory.
    held = held_by_both({"a.py": same, "b.py": old, "c.py": hash_bytes(b"C = 3\n"), "gone.py": "x"},
                        {"a.py": same, "b.py": old, "gone.py": "x"})  # fmt: skip
    assert held["c.py"] is None
    plan = plan_index(tmp_path, scan, held, commits=0)
    assert [(w.path, w.op) for w in plan.writes] == [
        ("b.py", "upsert"), ("c.py", "upsert"), ("gone.py", "delete")]  # fmt: skip
    assert (plan.unchanged, plan.deleted, plan.commits) == (1, 1, 0)
    assert plan.writes[0].content == "B = 2\n"
    assert plan.writes[0].content_hash == hash_bytes(b"B = 2\n")
    again = plan_index(tmp_path, scan, {p: hash_bytes((tmp_path / p).read_bytes())
                                        for p in scan.files}, commits=0)  # fmt: skip
    assert again.writes == [] and again.unchanged == 3


def test_paths_a_repository_cannot_hold_are_counted_not_written(tmp_path: Path) -> None:
    scan = _tree(tmp_path, {"ok.py": "x = 1\n"})
    scan.files.append("bad\x1bname.py")
    (tmp_path / "bad\x1bname.py").write_text("y = 2\n")
    plan = plan_index(tmp_path, scan, {}, commits=0)
    assert [w.path for w in plan.writes] == ["ok.py"] and plan.invalid_paths == 1


def test_uploads_are_cut_by_count_and_by_bytes_and_a_big_file_goes_alone() -> None:
    small = [PlannedWrite(f"f{i}.py", "upsert", "x" * 10) for i in range(MAX_WRITES + 5)]
    cut = list(batches(small, max_bytes=8 << 20))
    assert [len(b) for b in cut] == [MAX_WRITES, 5]
    sized = [PlannedWrite("a", "upsert", "a" * 600), PlannedWrite("b", "upsert", "b" * 600),
             PlannedWrite("huge", "upsert", "h" * 5000),
             PlannedWrite("gone", "delete")]  # fmt: skip
    assert [[w.path for w in b] for b in batches(sized, max_bytes=2000)] == [
        ["a"], ["b"], ["huge"], ["gone"]]  # fmt: skip
    assert [[w.path for w in b] for b in batches(sized, max_bytes=8000)] == [
        ["a", "b"], ["huge"], ["gone"]]  # fmt: skip
