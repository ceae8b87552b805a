"""``make run``, the README's first command: its script starts the stack, waits for `status`,
indexes a repository, shows two queries and stops on Ctrl-C; meanwhile an agent's hook
publishes an edit in that repository with nothing configured.

The stack runs on free ports here (another stack may hold the defaults): the script, `up`
and every command it runs share one environment that names the stack's ports, and no client
address (the broker's, the graph's, Milvus's), as a user who moved the ports sets them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from patchstream.embedded.services import free_port
from tests.e2e.conftest import make_repo, wait_for

ROOT = Path(__file__).resolve().parents[2]
READY = "Ctrl-C stops it."


def test_make_run_indexes_a_repository_answers_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    kafka, falkordb, query, gateway = (free_port() for _ in range(4))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env |= {
        "PATCHSTREAM_EMBEDDED": json.dumps({
            "data_dir": str(tmp_path / "data"), "kafka_port": kafka, "falkordb_port": falkordb,
            "milvus_port": free_port(), "metrics_port": 0}),
        "PATCHSTREAM_QUERY": json.dumps({"port": query}),
        "PATCHSTREAM_GATEWAY": json.dumps({"port": gateway}),
        "REPO_DIR": str(make_repo(tmp_path / "shop", {
            "shop/delta.py": "def apply_file_delta(graph):\n    return graph\n",
            "shop/diff.py": "from shop.delta import apply_file_delta\n\n\n"
                            "def diff_states(a):\n    return apply_file_delta(a)\n",
            "shop/cli.py": "from shop.diff import diff_states\n\n\n"
                           "def main():\n    return diff_states(1)\n"})),
    }  # fmt: skip
    assert not {"PATCHSTREAM_VECTOR", "PATCHSTREAM_KAFKA", "PATCHSTREAM_GRAPH"} & set(env)
    script = subprocess.Popen(
        ["bash", "scripts/run.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert script.stdout is not None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (lines and READY in lines[-1]):
            line = script.stdout.readline()
            if not line:
                break  # the script ended
            lines.append(line)
        output = "".join(lines)
        assert READY in output, output[-4000:]
        assert re.search(r"indexed shop@main for tenant default: files=4 ", output), output
        # A library's own warning lines (pymilvus: "[WARNING][...]: failed to get mvccTs")
        # are not for a user who did nothing wrong.
        assert "[WARNING]" not in output, output
        # The script's two queries: the search finds the function, the walk finds the caller.
        _, search, callers = output.split("\n$ ")
        assert "shop/delta.py" in search and "apply_file_delta" in search, search
        assert "\n 1. main " in search and "\n 2. main " in search, search  # ranks, in order
        assert "shop/cli.py" in callers and "def main" in callers, callers
        # Claude Code's hook on an edit in that checkout: no registry, no gateway setting.
        repo = Path(env["REPO_DIR"])
        (repo / "shop" / "hooked.py").write_text("def written_by_the_agent():\n    return 3\n")
        hook = subprocess.run(
            [sys.executable, "-m", "patchstream.cli.main", "hook", "claude-code"], env=env,
            input=json.dumps({"session_id": "cc-1", "tool_name": "Write", "cwd": str(repo),
                              "tool_input": {"file_path": "shop/hooked.py", "content": "."}}),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert hook.returncode == 0 and "published 1 write" in hook.stderr, hook.stderr

        def found(text: str, path: str) -> bool:
            search = subprocess.run(
                [sys.executable, "-m", "patchstream.cli.main", "query", "search", text,
                 "--repo", "shop", "--limit", "3"],
                env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            return path in search.stdout

        wait_for(lambda: found("written_by_the_agent", "shop/hooked.py"),
                 what="the hooked edit in search")  # fmt: skip
        # An editor's save, no hook: the watch `make run` left on the repository sends it.
        (repo / "shop" / "edited.py").write_text("def saved_in_an_editor():\n    return 4\n")
        wait_for(lambda: found("saved_in_an_editor", "shop/edited.py"),
                 what="the editor's save in search")  # fmt: skip
    finally:
        os.killpg(script.pid, signal.SIGINT)  # Ctrl-C in the terminal: the whole group
        code = script.wait(120)
    assert code == 0, "".join(lines)[-4000:]
    watches = subprocess.run(["pgrep", "-f", f"patchstream watch {env['REPO_DIR']}"],
                             capture_output=True, text=True)  # fmt: skip
    assert watches.stdout == "", watches.stdout  # Ctrl-C stopped the watch too
