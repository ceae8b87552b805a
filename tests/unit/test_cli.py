from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchstream.cli.main import cli
from tests.conftest import FIXTURES


def test_parse_json_has_the_documented_fields() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "parse",
            str(FIXTURES / "rust/src/shapes.rs"),
            "--repo",
            "demo",
            "--path",
            "src/shapes.rs",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"path", "language", "content_hash", "flags", "symbols", "edges", "chunks"} <= set(data)
    assert data["path"] == "src/shapes.rs" and data["language"] == "rust"
    symbol = next(s for s in data["symbols"] if s["qualified_name"] == "Circle.new")
    assert symbol["id"] == "demo::src/shapes.rs::Circle.new"
    assert {"id", "kind", "name", "qualified_name", "start_line", "end_line", "signature"} <= set(
        symbol
    )
    assert {"type", "src", "dst"} <= set(data["edges"][0])
    chunk = data["chunks"][0]
    assert {"id", "symbol_id", "content_hash", "start_line", "end_line", "tokens"} <= set(chunk)
    assert all(flag is False for flag in data["flags"].values())


def test_parse_human_output_lists_symbols() -> None:
    result = CliRunner().invoke(cli, ["parse", str(FIXTURES / "go/shapes.go")])
    assert result.exit_code == 0, result.output
    assert "language=go" in result.output
    assert "func NewCircle(r float64) *Circle" in result.output


def test_schemas_check_passes_on_the_repository() -> None:
    schema_dir = FIXTURES.parents[1] / "schemas"
    result = CliRunner().invoke(cli, ["schemas", "--check", "--out", str(schema_dir)])
    assert result.exit_code == 0, result.output


def test_refused_input_is_one_line_and_exit_2(tmp_path: object) -> None:
    """Issue #36: `emit --path ../etc/passwd` printed 31 lines of traceback,
    `index --repo 'bad name'` 43 and `index --ref main~x` stored nothing after a summary."""
    runner = CliRunner()
    cases = [
        ["emit", "--repo", "demo", "--path", "../etc/passwd", "--stdin"],
        ["index", str(FIXTURES), "--repo", "bad name"],
        ["index", str(FIXTURES), "--repo", "demo", "--ref", "main~x"],
        ["index", str(FIXTURES), "--repo", "demo", "--base", "a/../b"],
    ]
    for argv in cases:
        result = runner.invoke(cli, argv, input="x = 1\n")
        assert result.exit_code == 2, (argv, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, result.output)
        assert "Traceback" not in result.output


def test_a_broker_that_does_not_answer_is_named_with_exit_1(
    monkeypatch: object, tmp_path: Path
) -> None:
    import pytest

    from patchstream.config.settings import get_settings

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("PATCHSTREAM_KAFKA__BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("PATCHSTREAM_EMBEDDED__DATA_DIR", str(tmp_path))  # where its outbox goes
    monkeypatch.delenv("PATCHSTREAM_GATEWAY__URL", raising=False)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli, ["emit", "--repo", "demo", "--path", "a.py", "--stdin"],
                                    input="x = 1\n")  # fmt: skip
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 1, result.output
    assert "error: the broker did not answer" in result.output
    assert "patchstream up" in result.output and "Traceback" not in result.output


def test_what_the_cli_cannot_describe_is_left_to_be_a_bug() -> None:
    from patchstream.cli.errors import describe
    from patchstream.errors import StoreUnavailable

    assert describe(KeyError("x")) is None
    unavailable = describe(StoreUnavailable("FalkorDB read: not answering", store="falkordb"))
    assert unavailable is not None and unavailable[1] == 1


def test_a_zero_budget_is_refused_not_replaced() -> None:
    """Issue #36: `--budget 0` silently meant 8000; the HTTP API refuses it, so does the CLI."""
    for argv in (
        ["query", "context", "x", "--budget", "0"],
        ["run", "resume", "r", "--budget", "0"],
    ):
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 2 and "--budget" in result.output, result.output


def test_repo_drop_asks_first_and_a_no_drops_nothing() -> None:
    """Dropping a repository is destructive: without --yes the CLI asks, and "n" stops it
    before any request (the query URL here points at nothing that listens)."""
    env = {"PATCHSTREAM_QUERY": json.dumps({"url": "http://127.0.0.1:9", "api_key": "k"})}
    result = CliRunner().invoke(cli, ["repo", "drop", "demo"], input="n\n", env=env)
    assert result.exit_code == 1 and "Drop every ref of demo from both stores?" in result.output
    assert "Aborted" in result.output and "unreachable" not in result.output
    result = CliRunner().invoke(cli, ["repo", "drop", "demo", "--ref", "x", "--yes"], env=env)
    assert result.exit_code != 0 and "unreachable" in result.output  # it did try, with --yes


def test_operator_commands_refuse_to_run_as_clients_of_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #36: `reconcile` and `dlq` open the broker and the stores; with only a server URL
    they say so in one line instead of failing on a store address they never had."""
    from patchstream.config.settings import get_settings

    monkeypatch.setenv("PATCHSTREAM_SERVER", "https://ps.example.com")
    get_settings.cache_clear()
    try:
        for argv in (["reconcile", "--all"], ["dlq", "list"]):
            result = CliRunner().invoke(cli, argv)
            assert result.exit_code == 2, (argv, result.output)
            assert "is an operator command" in result.output and "Traceback" not in result.output
    finally:
        get_settings.cache_clear()


def test_output_cut_short_by_its_reader_is_not_reported_as_a_stack_down(tmp_path: Path) -> None:
    """``query search ... | head`` printed "error: Broken pipe; is `patchstream up`
    running": a reader that stops is not a failure to report."""
    import subprocess
    import sys

    many = tmp_path / "many.py"  # its listing is far over a pipe's 64 KiB buffer
    many.write_text("".join(f"def function_number_{i}(a, b):\n    return a\n" for i in range(4000)))
    child = subprocess.Popen([sys.executable, "-m", "patchstream.cli.main", "parse", str(many)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline()
    child.stdout.close()  # the reader stops: the writer's next write fails
    assert child.wait(timeout=60) == 141
    assert child.stderr.read() == b""


def test_the_agents_page_lists_every_mcp_tool() -> None:
    """Issue #55: the docs listed 10 of the 13 tools."""
    from pathlib import Path

    from patchstream.config.settings import Settings
    from patchstream.query.mcp_server import create_mcp_server

    page = (Path(__file__).parents[2] / "docs/getting-started/agents.md").read_text()
    tools = [t.name for t in create_mcp_server(Settings())._tool_manager.list_tools()]
    assert len(tools) >= 14
    assert [name for name in tools if f"`{name}`" not in page] == []


def test_the_cli_reference_lists_every_mcp_tool() -> None:
    from pathlib import Path

    from patchstream.config.settings import Settings
    from patchstream.query.mcp_server import create_mcp_server

    reference = (Path(__file__).parents[2] / "docs/reference/cli.md").read_text()
    section = reference[reference.index("patchstream mcp") :]
    tools = [t.name for t in create_mcp_server(Settings())._tool_manager.list_tools()]
    assert [name for name in tools if name not in section[:3000]] == []


def test_a_search_says_when_its_index_may_lack_recent_writes() -> None:
    from patchstream.cli.query import lag_note

    behind = {"repo": "billing", "vector": {"lag_s": 42.4, "oldest_owed_at": 1.0}}
    assert lag_note(behind) == (
        "note: the search index of billing may lack writes of the last 42 s "
        "(`patchstream query freshness billing` says more)"
    )
    assert lag_note({"repo": "billing", "vector": {"lag_s": 0.2}}) is None  # current
    assert lag_note({"repo": "billing", "vector": {"lag_s": "soon"}}) is None  # not a figure
    assert lag_note(None) is None and lag_note({"hits": []}) is None  # an older server
