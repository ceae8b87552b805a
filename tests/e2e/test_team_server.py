"""The team server as its clients meet it: one URL and one key, a second Unix user that cannot
read the server's data dir, keys made and revoked while it runs, failures that say why."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchstream.embedded.supervisor import Supervisor
from tests.e2e.conftest import make_repo, wait_for

# argv: PORT, then the CLI's arguments, or ``--probe PORT2``: connect there and say what came.
LANDLOCKED_CLIENT = """
import errno, os, socket, sys
import landlockpy
port, args = int(sys.argv[1]), sys.argv[2:]
ruleset = landlockpy.Ruleset(handled_fs=landlockpy.AccessFS.NONE,
                             handled_net=landlockpy.AccessNet.CONNECT_TCP, best_effort=False)
ruleset.allow_port(port, landlockpy.AccessNet.CONNECT_TCP)
ruleset.restrict()
if args[:1] == ["--probe"]:
    try:
        socket.create_connection(("127.0.0.1", int(args[1])), timeout=5).close()
        print("connected")
    except OSError as exc:
        print("refused by landlock" if exc.errno == errno.EACCES else f"other {exc}")
    sys.exit(0)
os.execv(sys.executable, [sys.executable, "-m", "patchstream.cli.main", *args])
"""


def test_a_client_knows_one_url_and_one_key(stack: Supervisor, tmp_path: Path) -> None:
    """Issue #36: with PATCHSTREAM_SERVER and PATCHSTREAM_API_KEY only (dead broker and store
    addresses, an empty data dir, and Landlock letting it connect to the server's port
    only), an agent write into a workspace, read-your-writes, a run,
    a memory and ``status`` all go to the query service's one URL, which forwards writes to
    the gateway. The same from a profile file, refused while others may read it."""
    import subprocess
    import sys

    import httpx

    server, key = stack.settings.query.url, "key-default"
    home = tmp_path / "client-home"
    (home / "patchstream").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env.update({
        "PATCHSTREAM_SERVER": server, "PATCHSTREAM_API_KEY": key, "XDG_CONFIG_HOME": str(home),
        "PATCHSTREAM_KAFKA": json.dumps({"bootstrap": "127.0.0.1:1"}),
        "PATCHSTREAM_GRAPH": json.dumps({"falkordb_port": 1}),
        "PATCHSTREAM_VECTOR": json.dumps({"milvus_uri": "http://127.0.0.1:1"}),
        "PATCHSTREAM_EMBEDDED": json.dumps({"data_dir": str(tmp_path / "no-stack")}),
    })  # fmt: skip

    # The client may open TCP connections to the server's port only (Landlock, kept across
    # exec): the broker's and FalkorDB's ports are out of its reach, checked first.
    port = int(server.rsplit(":", 1)[1])
    fenced = [sys.executable, "-c", LANDLOCKED_CLIENT, str(port)]
    stores = stack.settings.embedded
    for closed in (stores.kafka_port, stores.falkordb_port):
        probe = subprocess.run([*fenced, "--probe", str(closed)], capture_output=True, text=True,
                               timeout=60)  # fmt: skip
        assert probe.stdout.strip() == "refused by landlock", probe.stdout + probe.stderr

    def cli(*args: str, stdin: str | None = None, environ: dict[str, str] = env) -> str:
        done = subprocess.run([*fenced, *args], env=environ, input=stdin, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    wrote = json.loads(cli("emit", "--repo", "oneurl", "--path", "pkg/a.py", "--workspace",
                           "w1", "--stdin", stdin="def alpha():\n    return 1\n"))  # fmt: skip
    assert wrote["tenant"] == "default"  # the key's, as the server says (issue #55)

    def failing(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*fenced, *args], env=env, capture_output=True, text=True,
                              timeout=120, input="")  # fmt: skip
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, no trace
        return done

    # Issue #55: every failure says why in one line, with an exit code by cause.
    gone = failing("query", "freshness", "nosuchrepo")
    assert gone.returncode == 3 and "no repository 'nosuchrepo'" in gone.stderr
    callers = failing("query", "callers", "get", "--repo", "nosuchrepo")
    assert callers.returncode == 3 and "no repository 'nosuchrepo'" in callers.stderr
    too_deep = failing("query", "callers", "alpha", "--depth", "5")
    assert too_deep.returncode == 2 and "--depth" in too_deep.stderr
    teamb = failing("emit", "--repo", "oneurl", "--path", "b.py", "--tenant", "teamb", "--stdin")
    assert teamb.returncode == 2 and "tenant" in teamb.stderr
    with httpx.Client(base_url=server, timeout=90,
                      headers={"Authorization": f"Bearer {key}"}) as client:  # fmt: skip
        waited = client.get("/v1/wait", params={"read_token": wrote["read_token"], "timeout": 60})
        assert waited.status_code == 200 and waited.json()["applied"], waited.text
        files = client.get("/v1/files", params={"repo": "oneurl", "ref": "main~w1"}).json()
        assert [f["path"] for f in files["files"]] == ["pkg/a.py"]
        run = json.loads(cli("run", "start", "ship alpha", "--repo", "oneurl"))
        assert run["status"] == "RUNNING"
        remembered = client.post("/v1/memory/proposals", json={
            "scope": "project", "owner": "oneurl", "content": "alpha returns one",
            "memory_type": "fact", "source": {"kind": "agent"},
            "subject": {"kind": "repo", "id": "oneurl"}})  # fmt: skip
        assert remembered.status_code == 201, remembered.text
        assert "alpha returns one" in cli("memory", "list")
        # The gateway's answers come back as they are: a refusal keeps its status and reason.
        refused = client.post("/v1/patches", json={"writes": [{"repo": "oneurl", "ref": "main",
                              "path": "../x.py", "op": "upsert", "content": ""}]})  # fmt: skip
        assert refused.status_code == 422 and "path" in refused.text
    # A workspace nobody wrote is a 404, not main's answer (w1, written above, reads).
    space = failing("query", "search", "alpha", "--repo", "oneurl", "--workspace", "nosuchws")
    assert space.returncode == 3 and "no workspace 'nosuchws'" in space.stderr
    # index and query through the same URL: the uploads go on to the gateway.
    root = make_repo(tmp_path / "one", {"pkg/beta.py": "def beta_total():\n    return 2\n"})
    indexed = json.loads(cli("index", str(root), "--repo", "oneidx", "--json", "--commits", "0",
                             "--timeout", "180"))  # fmt: skip
    assert (indexed["published"], indexed["complete"]) == (2, True)  # the module, .gitignore
    found = json.loads(cli("query", "search", "beta_total", "--repo", "oneidx", "--json"))
    assert any(h["path"] == "pkg/beta.py" for h in found["hits"]), found
    status = cli("status").splitlines()
    assert [line.split()[0] for line in status] == ["query", "gateway"]
    assert all(" up, tenant " in line for line in status), status
    # Issue #55: a wrong key is said as such, with its own exit code, not "up".
    wrong = subprocess.run([*fenced, "status"], capture_output=True, text=True, timeout=60,
                           env={**env, "PATCHSTREAM_API_KEY": "not-a-key"})  # fmt: skip
    assert wrong.returncode == 4, wrong.stdout + wrong.stderr
    assert wrong.stdout.count("key refused (401: the API key sent is not recognised") == 2
    # A key made while the server runs works at once for both services; revoked, it stops
    # within a second or two; no restart either way.
    operator = {**os.environ, "PATCHSTREAM_EMBEDDED": json.dumps(
        {"data_dir": stack.settings.embedded.data_dir})}  # fmt: skip
    keys = [sys.executable, "-m", "patchstream.cli.main", "keys"]
    made = subprocess.run([*keys, "create", "--tenant", "default", "--name", "e2e-ann"],
                          env=operator, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0 and made.stdout.startswith("psk_"), made.stderr
    with_key = {**env, "PATCHSTREAM_API_KEY": made.stdout.strip()}

    def status_code() -> int:
        return subprocess.run([*fenced, "status"], env=with_key, capture_output=True,
                              timeout=60).returncode  # fmt: skip

    wait_for(lambda: status_code() == 0, 15, "the new key taken by both services")
    # A person's key reads and writes; dropping a repository is an admin's.
    drop = subprocess.run([*fenced, "repo", "drop", "oneidx", "--yes"], env=with_key,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert drop.returncode == 4 and "needs an admin key" in drop.stderr, drop.stderr
    listed = subprocess.run([*keys, "list"], env=operator, capture_output=True, text=True,
                            timeout=60).stdout  # fmt: skip
    assert "e2e-ann" in listed and made.stdout.strip() not in listed
    revoked = subprocess.run([*keys, "revoke", "e2e-ann"], env=operator, timeout=60)
    assert revoked.returncode == 0
    wait_for(lambda: status_code() == 4, 15, "the revoked key refused")
    # The same from a profile; not while other users may read its key.
    profile = home / "patchstream" / "client.toml"
    profile.write_text(f'server = "{server}"\napi_key = "{key}"\n')
    profile.chmod(0o644)
    bare = {k: v for k, v in env.items() if k not in ("PATCHSTREAM_SERVER", "PATCHSTREAM_API_KEY")}
    open_profile = subprocess.run([*fenced, "status"], env=bare, capture_output=True, text=True,
                                  timeout=60)  # fmt: skip
    assert open_profile.returncode != 0 and "chmod 600" in open_profile.stderr
    assert "Traceback" not in open_profile.stderr
    profile.chmod(0o600)
    assert "alpha returns one" in cli("memory", "list", environ=bare)
    assert not (tmp_path / "no-stack").exists()  # the client wrote nothing of a stack's


NOBODY = 65534  # the second user: no group, no home, no way into the server's data dir
SESSIONS = (
    "class Session:\n    def request(self, method, url):\n        return send(method, url)\n\n"
    "    def get(self, url):\n        return self.request('GET', url)\n\n\n"
    "def send(method, url):\n    return (method, url)\n"
)
API = (
    "from requests.sessions import Session\n\n\n"
    "def request(method, url):\n    return Session().request(method, url)\n\n\n"
    "def get(url):\n    return request('get', url)\n"
)


@pytest.fixture
def second_home() -> Iterator[Path]:
    """A home of the second user, outside pytest's root-only temp tree."""
    home = Path(tempfile.mkdtemp(prefix="ps-second-user-"))
    home.chmod(0o755)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_second_unix_user_runs_the_team_walkthrough(stack: Supervisor, second_home: Path) -> None:
    """Issue #55's walkthrough, as the user it was reported by: another Unix account (nobody,
    when the suite runs as root) that knows the server's URL and a key made for it, and
    cannot read the data dir. It indexes requests with its PDF named .ai, writes into a
    workspace, asks through MCP, and meets a wrong key and its own key revoked."""
    as_root = os.geteuid() == 0
    drop = (
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if as_root else []
    )
    repo = make_repo(second_home / "requests", {
        "src/requests/sessions.py": SESSIONS, "src/requests/api.py": API,
        "src/requests/__init__.py": "from requests.api import get, request\n"})  # fmt: skip
    (repo / "ext").mkdir()
    # A PDF named .ai, under the size cap (requests' is 2.1 MB, over it): binary by its bytes.
    (repo / "ext" / "requests-logo.ai").write_bytes(
        b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n" + b"1 0 obj\n<< /Length 9 >>\nstream\n" * 45_000
    )
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x",
                    "commit", "-qm", "logo"], check=True)  # fmt: skip
    if as_root:
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(second_home)], check=True)

    data_dir = stack.settings.embedded.data_dir
    operator = {**os.environ, "PATCHSTREAM_EMBEDDED": json.dumps({"data_dir": data_dir})}
    keys = [sys.executable, "-m", "patchstream.cli.main", "keys"]
    made = subprocess.run([*keys, "create", "--tenant", "acme", "--name", "second-user"],
                          env=operator, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0 and made.stdout.startswith("psk_"), made.stderr
    env = {"PATH": os.environ["PATH"], "HOME": str(second_home), "LANG": "C.UTF-8",
           "XDG_CONFIG_HOME": str(second_home / ".config"),
           "XDG_STATE_HOME": str(second_home / ".state"),
           "XDG_DATA_HOME": str(second_home / ".data"),
           "PATCHSTREAM_SERVER": stack.settings.query.url,
           "PATCHSTREAM_API_KEY": made.stdout.strip()}  # fmt: skip

    def cli(
        *args: str, key: str | None = None, stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        environ = env if key is None else {**env, "PATCHSTREAM_API_KEY": key}
        return subprocess.run([*drop, sys.executable, "-m", "patchstream.cli.main", *args],
                              env=environ, cwd=second_home, input=stdin, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    if as_root:  # the premise: the server's state is out of this user's reach
        peek = subprocess.run([*drop, "ls", data_dir], capture_output=True, text=True)
        assert peek.returncode != 0 and "Permission denied" in peek.stderr, peek
    status = cli("status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert all(" up, tenant acme" in line for line in status.stdout.splitlines()), status.stdout

    indexed = cli("index", str(repo), "--repo", "requests", "--commits", "0", "--json",
                  "--timeout", "240")  # fmt: skip
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    summary = json.loads(indexed.stdout)
    assert summary["complete"] and summary["published"] == 5, summary  # 3 modules, .gitignore, .ai
    withheld = {w["path"]: w["reason"] for w in summary["withheld"]}
    assert withheld == {"ext/requests-logo.ai": "binary"}, summary  # named, not refused whole
    found = json.loads(cli("query", "search", "Session request send", "--repo", "requests",
                           "--json").stdout)  # fmt: skip
    assert any(h["path"] == "src/requests/sessions.py" for h in found["hits"]), found

    hook = "def dispatch_hook(h):\n    return send(1, h)\n"
    wrote = cli("emit", "--repo", "requests", "--path", "src/requests/hooks.py", "--workspace",
                "w1", "--stdin", stdin=hook)  # fmt: skip
    assert wrote.returncode == 0, wrote.stderr
    assert json.loads(wrote.stdout)["tenant"] == "acme"  # the key's, as the server says
    teamb = cli("emit", "--repo", "requests", "--path", "b.py", "--tenant", "teamb", "--stdin")
    assert teamb.returncode == 2 and "tenant" in teamb.stderr, teamb.stderr

    def in_workspace() -> bool:
        spaced = cli("query", "search", "dispatch_hook", "--repo", "requests", "--workspace",
                     "w1", "--json")  # fmt: skip
        assert spaced.returncode == 0, spaced.stderr
        return any(h["path"] == "src/requests/hooks.py" for h in json.loads(spaced.stdout)["hits"])

    wait_for(in_workspace, 120, "the workspace write in the workspace's search")

    said = asyncio.run(_mcp_walk([*drop, sys.executable], env, second_home))
    assert said["callers"] == {"get", "request"}, said  # Session.get and api.request
    assert "no repository 'nosuchrepo'" in said["missing repo"], said
    assert "budget" in said["misnamed"], said
    assert "Traceback" not in said["stderr"], said["stderr"]

    wrong = cli("status", key="psk_not-a-key")
    assert wrong.returncode == 4 and "key refused (401: the API key sent is not recognised" in (
        wrong.stdout
    ), wrong.stdout + wrong.stderr
    revoked = subprocess.run([*keys, "revoke", "second-user"], env=operator, timeout=60)
    assert revoked.returncode == 0
    wait_for(lambda: cli("status").returncode == 4, 15, "the revoked key refused")
    after = cli("query", "search", "send", "--repo", "requests")
    assert after.returncode == 4 and len(after.stderr.strip().splitlines()) == 1, after.stderr


async def _mcp_walk(python: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """MCP over stdio as the second user, through the server's URL: an answer, and two
    refusals that carry their reasons."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=python[0], args=[*python[1:], "-m",
                                   "patchstream.cli.main", "mcp"], env=env, cwd=cwd)  # fmt: skip
    said: dict[str, Any] = {}
    with tempfile.TemporaryFile("w+") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            callers = await client.call_tool("find_callers", {"symbol": "Session.request",
                                                              "repo": "requests"})  # fmt: skip
            assert not callers.is_error, callers
            answer = json.loads(callers.content[0].text)  # type: ignore[union-attr]
            said["callers"] = {c["name"] for c in answer["callers"]}
            for name, tool, arguments in (
                ("missing repo", "find_callers", {"symbol": "get", "repo": "nosuchrepo"}),
                ("misnamed", "get_context", {"query": "send", "budget": 500}),
            ):  # fmt: skip
                refused = await client.call_tool(tool, arguments)
                assert refused.is_error, (name, refused)
                said[name] = refused.content[0].text  # type: ignore[union-attr]
        errors.seek(0)
        said["stderr"] = errors.read()
    return said
