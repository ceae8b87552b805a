"""Hostile input bound for git, stores and logs, refused before anything runs.

Real git repositories made here; each test feeds what an attacker would send.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from patchstream.errors import ConfigError, ContractError
from patchstream.producers.git_mirror import (
    Mirror,
    UnsafeGitInput,
    git_environment,
    validate_branch,
    validate_clone_url,
    validate_object_id,
)
from patchstream.producers.registry import RegisteredRepo, Registry
from patchstream.producers.webhooks import parse_json, read_github_push, read_gitlab_push
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.read_tokens import make_read_token, parse_read_token
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.stores.vector.milvus_client import lit


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def mirrored(tmp_path: Path) -> tuple[Mirror, str]:
    origin = tmp_path / "roots" / "shop"
    subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True)
    (origin / "a.py").write_text("x = 1\n")
    _git(origin, "add", "-A")
    _git(origin, "commit", "-qm", "one")
    mirror = Mirror(tmp_path / "mirrors", "acme", "shop", f"file://{origin}", [tmp_path / "roots"])
    mirror.fetch()
    return mirror, _git(origin, "rev-parse", "HEAD")


OPTION_SHAS = ["--output={out}", "-o{out}", "--output", "HEAD", "main", "a" * 39, "A" * 40,
               "a" * 40 + "\n", "a" * 41, "0" * 40 + " --output={out}", "@{{-1}}"]  # fmt: skip


@pytest.mark.parametrize("hostile", OPTION_SHAS)
def test_a_hostile_after_or_before_never_reaches_git(
    mirrored: tuple[Mirror, str], tmp_path: Path, hostile: str
) -> None:
    mirror, head = mirrored
    target = tmp_path / "site-packages" / "zz.pth"
    target.parent.mkdir()
    value = hostile.format(out=target)
    with pytest.raises(UnsafeGitInput):
        mirror.diff(head, value)
    with pytest.raises(UnsafeGitInput):
        mirror.diff(value, head)
    with pytest.raises(UnsafeGitInput):
        mirror.log_messages(value, head)
    with pytest.raises(UnsafeGitInput):
        mirror.files(value)
    assert not target.exists()
    assert mirror.diff(None, head).changes[0].path == "a.py"  # the honest call still works


def test_a_signed_push_payload_is_validated_before_git(tmp_path: Path) -> None:
    repo = RegisteredRepo(tenant="acme", name="shop", clone_url="https://git.example/shop.git")
    registry = Registry(repos=[repo])
    good = {"ref": "refs/heads/main", "before": "0" * 40, "after": "a" * 40,
            "repository": {"clone_url": "https://git.example/shop.git"}}  # fmt: skip
    assert read_github_push(registry, good, "d-1") is not None
    hostile = [
        {"after": f"--output={tmp_path}/zz.pth"},
        {"before": "--output=/tmp/x"},
        {"after": ["a" * 40]},
        {"before": 12},
        {"ref": "refs/heads/a..b"},
        {"ref": "refs/heads/-x"},
        {"ref": "refs/heads/x\nrefs/heads/y"},
        {"ref": "refs/heads/x.lock"},
        {"ref": "refs/heads/x@{1}"},
    ]
    for change in hostile:
        with pytest.raises(ContractError):
            read_github_push(registry, {**good, **change}, "d-2")
    with pytest.raises(ContractError):
        read_github_push(registry, good, "delivery\nforged-log-line")
    lab = {**good, "project": {"git_http_url": "https://git.example/shop.git"}}
    with pytest.raises(ContractError):
        read_gitlab_push(registry, {**lab, "after": "--upload-pack=touch /tmp/pwn"}, None)
    # A pusher name with control characters is dropped, never logged.
    pushed = read_github_push(registry, {**good, "pusher": {"name": "x\x1b[31m"}}, None)
    assert pushed is not None and pushed.actor is None


def test_branch_and_object_id_rules() -> None:
    assert validate_branch("feature/x-1") == "feature/x-1"
    assert validate_object_id("a" * 64) == "a" * 64
    for bad in ("", "-x", "a..b", "a b", "a~1", "a^", "a:b", "a\\b", "x" * 201, "@"):
        with pytest.raises(UnsafeGitInput):
            validate_branch(bad)


def test_clone_urls_that_run_commands_or_read_local_paths_are_refused(tmp_path: Path) -> None:
    roots = [tmp_path / "allowed"]
    (tmp_path / "allowed" / "r").mkdir(parents=True)
    assert validate_clone_url("https://github.com/acme/shop.git", roots)
    assert validate_clone_url("git@github.com:acme/shop.git", roots)
    assert validate_clone_url(f"file://{tmp_path}/allowed/r", roots)
    marker = tmp_path / "pwned"
    hostile = [f"ext::sh -c touch% {marker}", "fd::17", f"file://{tmp_path}/other",
               f"file://{tmp_path}/allowed/../other", "/etc", str(tmp_path / "allowed" / "r"),
               "--upload-pack=touch /tmp/pwn", "https://host/x\n", "file:///etc"]  # fmt: skip
    for url in hostile:
        with pytest.raises(UnsafeGitInput):
            validate_clone_url(url, roots)
    mirror = Mirror(tmp_path / "mirrors", "acme", "shop", f"ext::sh -c touch% {marker}", roots)
    with pytest.raises(UnsafeGitInput):
        mirror.fetch()
    assert not marker.exists()


def test_git_runs_without_inherited_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("PATCHSTREAM_EMBEDDING__OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("GIT_SSH_COMMAND", "touch /tmp/pwned")
    env = git_environment()
    assert "sk-secret" not in "".join(env.values())
    assert "GIT_SSH_COMMAND" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_PROTOCOL_FROM_USER"] == "0"
    assert "ext" not in env["GIT_ALLOW_PROTOCOL"].split(":")
    # What git itself sees: run it with that environment and read its environment back.
    seen = subprocess.run(["git", "var", "-l"], env=env, capture_output=True, text=True)
    assert "sk-secret" not in seen.stdout
    assert os.environ["OPENAI_API_KEY"] == "sk-secret"  # the process's own is untouched


def _event(**fields: object) -> PatchEvent:
    base: dict[str, object] = {"tenant": "acme", "repo": "shop", "path": "a.py", "op": "upsert",
                               "content": "x = 1\n", "version": 1, "source": "agent"}  # fmt: skip
    return PatchEvent.model_validate({**base, **fields})


@pytest.mark.parametrize(
    "fields",
    [
        {"session_id": "s\x00"},
        {"session_id": "s" * 129},
        {"run_id": "run\n2"},
        {"actor": "dev\x1b[2J"},
        {"path": "src/a\x07.py"},
        {"path": "src/\u2028a.py"},
        {"path": "a/" * 600 + "x.py"},
        {"path": "src/\ud800.py"},
        {"content": "x = '\ud800'\n"},
        {"repo": "a/../b"},
        {"repo": "shop\n"},
        {"tenant": "acme\n"},
        {"ref": "main..x"},
        {"workspace": "w/../../x"},
        {"commit": "--output=/tmp/x"},
        {"batch_id": "b\x00"},
        {"base_ref": "--upload-pack=x"},
        {"base_ref": "main..x"},
        {"base_ref": "main\n"},
        {"base_ref": "main~agent"},
    ],
)
def test_event_fields_with_control_characters_or_traversal_are_refused(
    fields: dict[str, object],
) -> None:
    with pytest.raises(ValidationError):
        _event(**fields)


def test_store_names_and_literals_refuse_what_their_parsers_cannot_take() -> None:
    store = FalkorGraphStore.__new__(FalkorGraphStore)
    store.graph_prefix = "patchstream_"
    assert store.graph_name("acme") == "patchstream_acme"
    for tenant in ("acme\n", "a..b", "", "a b", "a\x00"):
        with pytest.raises(ConfigError):
            store.graph_name(tenant)
    assert lit('a"b\\c') == '"a\\"b\\\\c"'
    for value in ("a\x00", "a\nb", "\ud800", "x\x1b"):
        with pytest.raises(ContractError):
            lit(value)


def test_nested_json_and_oversized_read_tokens_are_refused() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(ContractError):
        parse_json(deep)
    with pytest.raises(ContractError):
        parse_json(b'{"a":' * 5000 + b"1" + b"}" * 5000)
    import base64

    token = base64.urlsafe_b64encode(b'{"t":"acme","w":' + deep + b"}").decode()
    with pytest.raises(ContractError):
        parse_read_token(token)
    events = [_event(path=f"f{i}.py", version=i + 1) for i in range(30)]
    assert len(parse_read_token(make_read_token(events))[1]) == 30
    with pytest.raises(ContractError, match="at most 10"):
        parse_read_token(make_read_token(events), max_writes=10)
    # Issue #36: garbage answered with the decoder's internals ("'utf-8' codec can't ...").
    for garbage in ("garbage", "gQ", "!!!", ""):
        with pytest.raises(ContractError) as refused:
            parse_read_token(garbage)
        assert str(refused.value).startswith("malformed read token")
        assert "codec" not in str(refused.value) and "Expecting" not in str(refused.value)


def test_a_merge_base_never_takes_an_option_or_a_name(tmp_path: Path) -> None:
    from patchstream.producers.git_mirror import Mirror

    mirror = Mirror(tmp_path, "acme", "shop", "file:///nowhere")
    for hostile in ("--output=/tmp/pwned", "HEAD", "main", "a" * 39, "0" * 40 + "\n"):
        with pytest.raises(ContractError):
            mirror.merge_base(hostile, "0" * 40)
        with pytest.raises(ContractError):
            mirror.merge_base("0" * 40, hostile)
