"""``patchstream watch`` against a real stack: an editor's writes reach search, its deletes
leave it, and what must stay on the machine does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from patchstream.embedded.supervisor import Supervisor
from tests.e2e.conftest import make_repo, wait_for


def _found(stack: Supervisor, text: str) -> set[str]:
    """Paths of the watched repository whose rows search returns for ``text``."""
    hits = httpx.post(f"{stack.settings.query.url}/v1/search",
                      json={"query": text, "repo": "watched", "limit": 20},
                      headers={"Authorization": "Bearer key-acme"}, timeout=60)  # fmt: skip
    if hits.status_code == 404:  # the repository is not indexed yet
        return set()
    hits.raise_for_status()
    return {hit["path"] for hit in hits.json()["hits"] if text in hit["text"]}


def test_an_editors_writes_and_deletes_are_published_and_secrets_stay(
    stack: Supervisor, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "watched", {"pkg/base.py": "def base():\n    return 0\n"})
    gateway = f"http://127.0.0.1:{stack.settings.gateway.port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env["PATCHSTREAM_GATEWAY"] = json.dumps({"url": gateway, "api_key": "key-acme"})
    env["PATCHSTREAM_QUERY"] = json.dumps({"url": stack.settings.query.url,
                                           "api_key": "key-acme"})  # fmt: skip
    watch = subprocess.Popen(
        [sys.executable, "-m", "patchstream.cli.main", "watch", str(repo), "--repo", "watched",
         "--debounce-ms", "100"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert watch.stdout is not None
        first, second = watch.stdout.readline(), watch.stdout.readline()
        assert first.startswith(f"watching {repo.resolve()} -> watched@main"), first
        assert "not indexed from here yet: `patchstream index" in second, second
        # An editor's save: the file written in place, then again (the watch may start
        # watching a moment after it printed its line).
        edited = repo / "pkg" / "edited.py"

        def written() -> bool:
            edited.write_text("def zebra_watch_canary():\n    return 7\n")
            (repo / ".env").write_text("TOKEN=zebra_watch_secret\n")
            return "pkg/edited.py" in _found(stack, "zebra_watch_canary")

        wait_for(written, timeout=120, what="the edited file in search")
        edited.unlink()
        wait_for(lambda: not _found(stack, "zebra_watch_canary"), timeout=120,
                 what="the deleted file gone from search")  # fmt: skip
        assert _found(stack, "zebra_watch_secret") == set()  # .env never left the machine
    finally:
        watch.send_signal(signal.SIGINT)  # Ctrl-C
        out, _ = watch.communicate(timeout=60)
    assert watch.returncode == 0, out
    assert "skipped .env: secret: a key or credential file by its name" in out, out
    assert "stopped: " in out and "-pkg/edited.py" in out, out


# Built, so that this file is not itself a secret to the rule it exercises.
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIwalkthroughsecret\n-----END RSA PRIVATE KEY-----\n"
WITHHELD = {"tests/certs/server.key": "secret", "big.py": "too_large", "ext/logo.ai": "binary",
            "blob.py": "binary", "nul.py": "binary"}  # fmt: skip


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e", *args],
                   check=True, capture_output=True)  # fmt: skip


def _walkthrough_repo(root: Path) -> Path:
    """What the issue's walkthrough met in requests: a package that a branch moves, a private
    key, a 20 MB file, a PDF named .ai, binary and NUL files, a file of unclosed parentheses."""
    files = {
        f"src/walk/m{i}.py": f"def walk_{i}(x):\n    return helper_{i}(x)\n\n\n"
        f"def helper_{i}(x):\n    return x + {i}\n"
        for i in range(6)
    }
    repo = make_repo(root, files)  # fmt: skip
    (repo / "tests" / "certs").mkdir(parents=True)
    (repo / "tests" / "certs" / "server.key").write_text(PEM)
    (repo / "ext").mkdir()
    (repo / "ext" / "logo.ai").write_bytes(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n" + b"1 0 obj\n" * 40_000)
    (repo / "big.py").write_bytes(b"x = 1\n" * 3_500_000)  # 21 MB
    (repo / "blob.py").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64)
    (repo / "nul.py").write_bytes(b"x = 1\n\x00\n")
    (repo / "parens.py").write_text("x = " + "(" * 200_000 + "\n")
    # Under the size cap, but 9 MB as JSON (each control character escapes to six bytes):
    # over a gateway's body limit, so a server refuses it, alone.
    (repo / "ctrl.py").write_bytes(b"x = '" + b"\x01" * 1_500_000 + b"'\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the walkthrough's files")
    _git(repo, "switch", "-qc", "moved")
    _git(repo, "mv", "src/walk", "walk")
    (repo / "walk" / "m0.py").write_text("def walk_0(x):\n    return 'moved'\n")
    (repo / "walk" / "new.py").write_text("def walk_new():\n    return 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the package moves up")
    _git(repo, "switch", "-q", "master" if _branch_exists(repo, "master") else "main")
    return repo


def _branch_exists(repo: Path, name: str) -> bool:
    done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", name],
                          capture_output=True)  # fmt: skip
    return done.returncode == 0


def _clean_index(root: Path) -> dict[str, str | None]:
    """What an index of the tree from nothing holds: path -> hash."""
    from patchstream.indexing.plan import plan_index
    from patchstream.producers.tree_scan import scan_directory

    plan = plan_index(root, scan_directory(root), {}, commits=0)
    return {w.path: w.content_hash for w in plan.writes if w.op == "upsert"}


def _view(stack: Supervisor, repo: str) -> dict[str, str | None]:
    answer = httpx.get(f"{stack.settings.query.url}/v1/files", params={"repo": repo},
                       headers={"Authorization": "Bearer key-acme"}, timeout=60)  # fmt: skip
    answer.raise_for_status()
    return {f["path"]: f["hash"] for f in answer.json()["files"]}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "patchstream.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_the_walkthrough_ends_equal_to_a_clean_index_with_every_skipped_file_said(
    stack: Supervisor, tmp_path: Path
) -> None:
    """Issue #53's walkthrough, through the CLI and a team-server client: one file's trouble
    costs that file at every entry point, and a branch switch under a watch leaves nothing of
    the old branch."""
    repo = _walkthrough_repo(tmp_path / "walk")
    local = {**stack.environment(), "PATCHSTREAM_LOG_LEVEL": "WARNING"}
    done = _cli(local, "index", str(repo), "--repo", "walk", "--tenant", "acme", "--commits",
                "0", "--timeout", "300")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for path, reason in WITHHELD.items():  # each named, with its reason
        assert f"withheld {path}: " in done.stdout and f"flagged {reason}" in done.stdout, path
    wait_for(lambda: _view(stack, "walk") == _clean_index(repo), timeout=180,
             what="the index of the walkthrough's tree")  # fmt: skip
    fresh = httpx.get(f"{stack.settings.query.url}/v1/freshness", params={"repo": "walk"},
                      headers={"Authorization": "Bearer key-acme"}, timeout=60).json()  # fmt: skip
    flags = {f["path"]: f["flags"] for f in fresh["flagged_files"]}
    assert {path: [reason] for path, reason in WITHHELD.items()}.items() <= flags.items()
    assert "parse_timeout" in flags["parens.py"], flags  # within its budget, not ~40 s
    assert fresh["flagged"]["binary"] == 3 and fresh["flagged"]["secret"] == 1, fresh
    symbol_url = f"{stack.settings.query.url}/v1/symbols/walk::tests/certs/server.key"
    key_file = httpx.get(symbol_url, headers={"Authorization": "Bearer key-acme"},
                         timeout=60).json()  # fmt: skip
    assert key_file["flags"] == ["secret"] and key_file["kind"] == "file", key_file

    # A watch, then `git switch` to the branch where the package moved up a directory.
    client = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    client["PATCHSTREAM_GATEWAY"] = json.dumps({"url": stack.settings.gateway.url,
                                                "api_key": "key-acme"})  # fmt: skip
    client["PATCHSTREAM_QUERY"] = json.dumps({"url": stack.settings.query.url,
                                              "api_key": "key-acme"})  # fmt: skip
    watch = subprocess.Popen([sys.executable, "-m", "patchstream.cli.main", "watch", str(repo),
                              "--repo", "walk"], env=client, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        assert watch.stdout is not None
        assert watch.stdout.readline().startswith("watching "), "the watch did not start"
        _git(repo, "switch", "-q", "moved")
        wait_for(lambda: _view(stack, "walk") == _clean_index(repo), timeout=180,
                 what="the index of the switched tree, nothing of the old one")  # fmt: skip
        assert not [path for path in _view(stack, "walk") if path.startswith("src/")]
    finally:
        watch.send_signal(signal.SIGINT)
        out, _ = watch.communicate(timeout=60)
    assert watch.returncode == 0, out

    # A client of a team server: the same tree, the same rules, nothing refused whole.
    remote = {**client, "PATCHSTREAM_REMOTE": "1"}
    done = _cli(remote, "index", str(repo), "--repo", "walk-remote", "--commits", "0",
                "--timeout", "300")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "withheld big.py: " in done.stdout and "withheld ext/logo.ai: " in done.stdout
    assert "refused 'ctrl.py' by the server: gateway answered 413" in done.stderr, done.stderr
    everything_else = {p: h for p, h in _clean_index(repo).items() if p != "ctrl.py"}
    wait_for(lambda: _view(stack, "walk-remote") == everything_else, timeout=180,
             what="the remote index of the tree, but the file refused")  # fmt: skip

    # emit of the 20 MB file: a flagged name, not a broker refusal.
    emitted = _cli(client, "emit", "--repo", "walk", "--path", "big.py", "--file",
                   str(repo / "big.py"))  # fmt: skip
    assert emitted.returncode == 0, emitted.stderr
    assert "withheld big.py: " in emitted.stderr and "read_token" in emitted.stdout
