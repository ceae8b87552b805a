"""What `patchstream index` records of a checkout, and where the Claude Code hook sends an
edit from it: the recorded repository and branch, or a worktree's workspace over them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from patchstream.config.settings import GatewaySettings, Settings
from patchstream.errors import ConfigError
from patchstream.producers import checkouts
from patchstream.producers.checkouts import (
    Checkout,
    checkout_of,
    read_checkouts,
    record_path,
    remember_checkout,
)
from patchstream.producers.claude_hook import Skipped, Target, gateway_url, target_of


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return record_path()


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e",
                           *args], check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def test_a_checkout_is_recorded_private_and_replaced_by_a_later_index(
    record: Path, tmp_path: Path
) -> None:
    shop = tmp_path / "shop"
    shop.mkdir()
    remember_checkout(shop, "shop", "main")
    remember_checkout(shop, "store", "develop")  # re-indexed under another name
    assert read_checkouts() == [Checkout(shop.resolve(), "store", "develop")]
    assert record.stat().st_mode & 0o777 == 0o600
    assert record.parent.stat().st_mode & 0o077 == 0


def test_the_deepest_checkout_holds_a_path(record: Path, tmp_path: Path) -> None:
    outer, inner = tmp_path / "mono", tmp_path / "mono" / "vendor" / "lib"
    inner.mkdir(parents=True)
    remember_checkout(inner, "lib", "main")
    remember_checkout(outer, "mono", "main")
    found = read_checkouts()
    assert checkout_of(inner.resolve() / "a.py", found) == Checkout(inner.resolve(), "lib", "main")
    assert checkout_of(outer.resolve() / "b.py", found) == Checkout(outer.resolve(), "mono", "main")
    assert checkout_of(tmp_path.resolve() / "elsewhere.py", found) is None


def test_the_record_keeps_the_most_recent_checkouts(
    record: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkouts, "MAX_CHECKOUTS", 3)
    for i in range(5):
        remember_checkout(tmp_path / f"r{i}", f"r{i}", "main")
    assert [c.repo for c in read_checkouts()] == ["r4", "r3", "r2"]


def test_a_record_others_may_write_is_refused(record: Path, tmp_path: Path) -> None:
    remember_checkout(tmp_path, "shop", "main")
    record.chmod(0o622)
    with pytest.raises(ConfigError, match="another user may write it"):
        read_checkouts()


@pytest.mark.parametrize(
    "entry",
    [
        {"root": "/srv/shop", "repo": "../etc", "ref": "main"},
        {"root": "/srv/shop", "repo": "shop", "ref": "main\nx"},
        {"root": "relative/shop", "repo": "shop", "ref": "main"},
        {"root": "/srv/\x1bshop", "repo": "shop", "ref": "main"},
        {"root": "/srv/shop", "repo": 7, "ref": "main"},
        "a string",
    ],
)
def test_an_entry_no_event_could_carry_is_dropped(record: Path, entry: object) -> None:
    record.parent.mkdir(parents=True)
    good = {"root": "/srv/good", "repo": "good", "ref": "main"}
    record.write_text(json.dumps([entry, good]))
    record.chmod(0o600)
    assert read_checkouts() == [Checkout(Path("/srv/good"), "good", "main")]


def test_the_hook_sends_an_indexed_checkouts_edit_to_its_repo_and_branch(
    record: Path, tmp_path: Path
) -> None:
    shop = tmp_path / "shop"
    shop.mkdir()
    _git(shop, "init", "-q", "-b", "develop")
    (shop / "a.py").write_text("x = 1\n")
    _git(shop, "add", "-A")
    _git(shop, "commit", "-qm", "init")
    remember_checkout(shop, "shop", "develop")
    settings = Settings()
    assert target_of(shop.resolve() / "a.py", settings) == Target("shop", shop.resolve(), "develop")
    # A linked worktree (an agent's own copy): its branch's workspace, over the checkout's.
    worktree = tmp_path / "shop-agent"
    _git(shop, "worktree", "add", "-q", "-b", "agent/7", str(worktree))
    assert target_of(worktree.resolve() / "a.py", settings) == Target(
        "shop", worktree.resolve(), "develop", "agent-7")  # fmt: skip
    # ... also where it sits inside the checkout (an agent's copy under the project).
    inside = shop / ".agents" / "wt"
    _git(shop, "worktree", "add", "-q", "-b", "agent-8", str(inside))
    assert target_of(inside.resolve() / "a.py", settings) == Target(
        "shop", inside.resolve(), "develop", "agent-8")  # fmt: skip
    with pytest.raises(Skipped, match="no indexed checkout"):
        target_of(tmp_path.resolve() / "other" / "b.py", settings)


def test_the_hook_sends_to_the_local_gateway_unless_one_is_configured() -> None:
    assert gateway_url(Settings()) == "http://127.0.0.1:8730"
    anywhere = GatewaySettings(host="0.0.0.0", port=9000)
    assert gateway_url(Settings(gateway=anywhere)) == "http://127.0.0.1:9000"
    named = GatewaySettings(url="https://gw.example.com")
    assert gateway_url(Settings(gateway=named)) == "https://gw.example.com"
