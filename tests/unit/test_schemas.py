from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from patchstream.cli.schema_export import CONTRACTS, drifted_schemas, render_schemas
from patchstream.schemas import Edge, EdgeType, PatchEvent, Reference

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"


def test_checked_in_json_schemas_match_the_models() -> None:
    assert drifted_schemas(SCHEMA_DIR) == [], "run `patchstream schemas` and commit the result"
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.schema.json")) == sorted(render_schemas())


def test_drift_is_detected(tmp_path: Path) -> None:
    for name, text in render_schemas().items():
        (tmp_path / name).write_text(text)
    target = tmp_path / "edge.v1.schema.json"
    schema = json.loads(target.read_text())
    schema["properties"].pop("ref")
    target.write_text(json.dumps(schema))
    assert drifted_schemas(tmp_path) == ["edge.v1.schema.json"]


def test_every_contract_is_versioned_or_nested() -> None:
    assert all(name.endswith(".v1") for name in CONTRACTS)
    assert PatchEvent.model_fields["schema_version"].default == 1


def _event(**overrides: object) -> PatchEvent:
    fields: dict[str, object] = {
        "tenant": "acme",
        "repo": "shop",
        "path": "src/app.py",
        "op": "upsert",
        "content": "x = 1\n",
        "version": 1,
        "source": "agent",
    }
    fields.update(overrides)
    return PatchEvent.model_validate(fields)


def test_patch_event_key_and_defaults() -> None:
    event = _event(workspace="sess-1")
    assert event.key == "acme/shop/main~sess-1/src/app.py"
    assert event.occurred_at.tzinfo is not None
    assert len(event.event_id) == 32
    round_trip = PatchEvent.model_validate_json(event.model_dump_json())
    assert round_trip == event


@pytest.mark.parametrize(
    "path",
    [
        "../etc/passwd",
        "/abs/file.py",
        "a/../b.py",
        "a//b.py",
        ".git/config",
        "src/.GIT/x",
        "a\x00b",
        "a\\b.py",
        "",
    ],
)
def test_unsafe_paths_are_rejected(path: str) -> None:
    with pytest.raises(ValidationError):
        _event(path=path)


@pytest.mark.parametrize(
    "overrides",
    [
        {"op": "upsert", "content": None},
        {"op": "delete"},
        {"op": "rename", "content": None},
        {"op": "rename", "old_path": "src/old.py", "content": None},
        {"op": "rename", "old_path": "src/app.py"},
        {"old_path": "src/old.py"},
        {"blob": {"sha": "a" * 40}},
        {"schema_version": 2},
        {"tenant": ""},
        {"version": -1},
        {"source": "ftp"},
        {"occurred_at": datetime(2026, 1, 1)},
    ],
)
def test_invalid_events_are_rejected(overrides: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        _event(**overrides)


def test_valid_variants() -> None:
    assert _event(op="delete", content=None).op == "delete"
    renamed = _event(op="rename", old_path="src/old.py")
    assert renamed.old_path == "src/old.py"
    blob = _event(content=None, blob={"sha": "b" * 40})
    assert blob.blob is not None and blob.blob.sha == "b" * 40


def test_edge_dst_must_match_reference() -> None:
    ref = Reference(name="helper", module="pkg.util")
    edge = Edge.to_ref(EdgeType.CALLS, "r::a.py::f", ref)
    assert edge.dst == "ref:helper@pkg.util"
    assert Reference(name="print").as_dst() == "ref:print"
    with pytest.raises(ValidationError):
        Edge(type=EdgeType.CALLS, src="r::a.py::f", dst="r::b.py::g", ref=ref)
    with pytest.raises(ValidationError):
        Edge(type=EdgeType.CALLS, src="r::a.py::f", dst="ref:helper")


def test_checked_in_openapi_matches_the_service() -> None:
    from patchstream.query.api import openapi_document

    checked_in = (SCHEMA_DIR / "openapi.json").read_text()
    assert checked_in == openapi_document(), "run `patchstream openapi` and commit the result"
    paths = json.loads(checked_in)["paths"]
    assert {"/v1/search", "/v1/context", "/v1/freshness", "/v1/wait", "/v1/symbols"} <= set(paths)
    assert "/v1/symbols/{symbol_id}/callers" in paths


def test_the_docs_reference_pages_match_the_code() -> None:
    """docs/reference is generated from the CLI, the settings and the OpenAPI document."""
    from patchstream.cli.main import cli
    from patchstream.cli.reference_docs import reference_pages

    root = Path(__file__).resolve().parents[2]
    for path, text in reference_pages(cli).items():
        assert (root / path).read_text() == text, "run `patchstream docs-reference` and commit"
