from __future__ import annotations

import json

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
