"""Commits as ``index`` reads them (``git log -p -U0`` of a repository made by the test) and as
their ``_commits/`` pages carry them to the parse stage, hostile messages included."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchstream.indexing.plan import plan_index
from patchstream.parsing.commit_text import (
    HEAD_PATH,
    commit_path,
    parse_commit,
    parse_head,
    render_commit,
)
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.producers.git_history import defined_name, read_history
from patchstream.producers.tree_scan import scan_directory
from patchstream.schemas.history import ChangedFile, CommitInfo, issue_refs

SHA = "a" * 40


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), "-c", "user.name=Ann", "-c",
                           "user.email=ann@example.com", *args],
                          check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def _commit(root: Path, files: dict[str, str | bytes | None], message: str) -> str:
    for name, text in files.items():
        target = root / name
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--allow-empty", "-m", message)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    return root


def test_each_commit_keeps_its_parents_files_and_the_definitions_its_hunks_fell_in(
    repo: Path,
) -> None:
    first = _commit(repo, {"shapes.py": "def area(s):\n    return 1\n\n\ndef side(s):\n"
                                        "    return 1\n", "logo.png": b"\x89PNG\x00\x01"},
                    "Add shapes")  # fmt: skip
    second = _commit(repo, {"shapes.py": "def area(s):\n    return s * s\n\n\ndef side(s):\n"
                                         "    return 1\n", "logo.png": None,
                            "my notes.txt": "spaces in a name\n"},
                     "Square the side\n\nFixes #12 and gh-40; not &#39; or a#3")  # fmt: skip
    history, complete = read_history(repo, 10)
    assert complete and [c.info.sha for c in history] == [second, first]
    newest = history[0].info
    assert newest.parents == (first,)
    assert newest.subject == "Square the side" and newest.issues == ("#12", "#40")
    assert {c.path: (c.added, c.removed, c.symbols) for c in newest.changes} == {
        "shapes.py": (1, 1, ("area",)),
        "logo.png": (0, 0, ()),  # a binary file's delete: named, no lines
        "my notes.txt": (1, 0, ()),
    }
    assert read_history(repo, 1) == (history[:1], False)  # a limit says it cut
    assert read_history(repo.parent, 5) == ([], True)  # not a repository: nothing


def test_a_merge_lists_no_file_and_a_hostile_message_cannot_add_one(repo: Path) -> None:
    base = _commit(repo, {"a.py": "x = 1\n"}, "base")
    _git(repo, "checkout", "-q", "-b", "side")
    side = _commit(repo, {"b.py": "y = 2\n"}, "side")
    _git(repo, "checkout", "-q", "main")
    _commit(repo, {"c.py": "z = 3\n"}, "main moves")
    hostile = ("Merge side\n\n## Changed files\n\n- ../../etc/passwd (+1 -0)\n"
               "- src/evil.py (+9 -9): run\n\x1e\x1fnot a record\x1d")  # fmt: skip
    _git(repo, "merge", "-q", "--no-ff", "-m", hostile, "side")
    history, _ = read_history(repo, 10)
    merge = history[0]
    assert len(merge.info.parents) == 2 and side in merge.info.parents
    assert merge.info.changes == ()
    page = render_commit(merge.info, merge.message)
    assert parse_commit(page) == merge.info  # the message's list is not the commit's
    assert base in {c.info.sha for c in history}


def test_a_page_says_what_its_commit_is_and_nothing_a_stranger_wrote() -> None:
    info = CommitInfo(sha=SHA, parents=("b" * 40,), author="Ann", date="2024-01-02T03:04:05Z",
                      subject="Fix", changes=(ChangedFile(path="a/b.py", added=2, removed=1,
                                                          symbols=("area", "Square")),),
                      changes_cut=3, issues=("#7",))  # fmt: skip
    page = render_commit(info, "Fix\n\nFixes #7\n")
    assert parse_commit(page) == info
    assert parse_commit("# not a commit\n") is None
    forged = page.replace("Author: Ann", "Author: Ann\x1b[2J")
    assert parse_commit(forged) is None  # control characters: no commit node, the text stays
    assert parse_head(f"{SHA}\n") == SHA and parse_head("HEAD; rm -rf /\n") is None
    builder = FileStateBuilder()
    elsewhere = builder.build(FileRef("t", "r", "main", commit_path("c" * 40), 1), page.encode())
    assert elsewhere.commit_info is None  # a page naming another commit than its path
    state = builder.build(FileRef("t", "r", "main", commit_path(SHA), 1), page.encode())
    assert state.commit_info == info and state.chunks  # and embedded as prose
    head = builder.build(FileRef("t", "r", "main", HEAD_PATH, 1), f"{SHA}\n".encode())
    assert head.history_head == SHA


@given(st.text(max_size=300))
def test_any_message_renders_to_a_page_that_reads_back_as_its_commit(message: str) -> None:
    info = CommitInfo(sha=SHA, subject="s", changes=(ChangedFile(path="x.py", added=1),))
    parsed = parse_commit(render_commit(info, message))
    assert parsed is not None
    assert (parsed.sha, parsed.changes, parsed.parents) == (info.sha, info.changes, ())


def test_a_changed_definition_line_names_that_definition_not_the_one_above(repo: Path) -> None:
    text = "class Square:\n    def area(self):\n        return 1\n\n    def side(self):\n"
    _commit(repo, {"s.py": text + "        return 1\n"}, "add")
    _commit(repo, {"s.py": text.replace("def side", "def sides") + "        return 1\n"}, "rename")
    history, _ = read_history(repo, 5)
    assert history[0].info.changes[0].symbols == ("side", "sides")  # not "area", the context
    assert history[1].info.changes[0].symbols == ("Square", "area", "side")


def test_issue_references_and_definition_names() -> None:
    assert issue_refs("Fixes #12, refs GH-3, see #12 again; &#39; x#4 /#5") == ("#12", "#3")
    assert defined_name("class Square(Shape):") == "Square"
    assert defined_name("    async def fetch(self, url):") == "fetch"
    assert defined_name("func (s *Server) Serve(l net.Listener) error {") == "Serve"
    assert defined_name("static int area(struct square *s)") == "area"
    assert defined_name("if (x) {") is None


def test_index_publishes_the_head_and_drops_what_a_force_push_lost(repo: Path) -> None:
    first = _commit(repo, {"a.py": "x = 1\n"}, "first")
    lost = _commit(repo, {"a.py": "x = 2\n"}, "taken back")
    plan = plan_index(repo, scan_directory(repo), {}, commits=100)
    pages = {w.path: w for w in plan.writes if w.path.startswith("_commits/")}
    assert set(pages) == {commit_path(first), commit_path(lost), HEAD_PATH}
    assert pages[HEAD_PATH].content == f"{lost}\n" and plan.commits == 2
    held = {w.path: w.content_hash for w in plan.writes}
    assert plan_index(repo, scan_directory(repo), held, commits=100).writes == []  # not read
    lacking = {path: digest for path, digest in held.items() if path != commit_path(first)}
    again = plan_index(repo, scan_directory(repo), lacking, commits=100)
    assert [w.path for w in again.writes] == [commit_path(first)]  # same head, a page short

    _git(repo, "reset", "-q", "--hard", first)
    again = plan_index(repo, scan_directory(repo), held, commits=100)
    assert {(w.path, w.op) for w in again.writes} == {
        (commit_path(lost), "delete"), (HEAD_PATH, "upsert"), ("a.py", "upsert"),
    }  # fmt: skip
    shallow = plan_index(repo, scan_directory(repo), held, commits=0)
    assert all(not w.path.startswith("_commits/") for w in shallow.writes)  # pages stay
