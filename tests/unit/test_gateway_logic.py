"""Pure logic of the gateway: signatures, raw diffs, the registry."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from patchstream.errors import ConfigError
from patchstream.producers.git_mirror import parse_raw_diff
from patchstream.producers.registry import RegisteredRepo, Registry
from patchstream.producers.webhooks import github_signature_ok, gitlab_token_ok


def test_github_signature_is_hmac_sha256_over_the_raw_body() -> None:
    body = b'{"ref": "refs/heads/main"}'
    good = "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    assert github_signature_ok("k", body, good)
    assert not github_signature_ok("k", body + b" ", good)
    assert not github_signature_ok("other", body, good)
    assert not github_signature_ok("k", body, good[:-2])
    assert not github_signature_ok("k", body, None)
    assert not github_signature_ok("", body, "sha256=")  # an empty secret never passes
    assert gitlab_token_ok("tok", "tok") and not gitlab_token_ok("tok", "to")
    assert not gitlab_token_ok("", "")


def test_raw_diff_parsing_keeps_renames_and_rejects_dangerous_entries() -> None:
    blob = "a" * 40
    zero = "0" * 40
    records = [
        f":100644 100644 {blob} {blob} M", "src/app.py",
        f":100644 100644 {blob} {blob} R087", "old.py", "new.py",
        f":100644 000000 {blob} {zero} D", "gone.py",
        f":000000 120000 {zero} {blob} A", "link.py",
        f":000000 160000 {zero} {blob} A", "vendor/sub",
        f":000000 100644 {zero} {blob} A", "../escape.py",
        f":000000 100644 {zero} {blob} A", ".git/config",
    ]  # fmt: skip
    result = parse_raw_diff(("\0".join(records) + "\0").encode())
    assert [(c.status, c.path, c.old_path) for c in result.changes] == [
        ("M", "src/app.py", None), ("R", "new.py", "old.py"), ("D", "gone.py", None),
    ]  # fmt: skip
    assert result.rejected == ["link.py", "vendor/sub", "../escape.py", ".git/config"]


def test_registry_refuses_an_empty_webhook_secret() -> None:
    repo = RegisteredRepo(tenant="t", name="r", clone_url="file:///x")
    with pytest.raises(ConfigError, match="empty webhook secret"):
        Registry(repos=[repo]).check()
    ok = RegisteredRepo(tenant="t", name="r", clone_url="https://h/r.git", webhook_secret="s")
    registry = Registry(repos=[ok]).check()
    assert registry.find_by_url("https://h/r") is ok and registry.find_by_url("https://h/x") is None
