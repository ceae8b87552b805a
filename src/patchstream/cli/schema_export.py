"""Language-neutral copies of the contracts: JSON Schema files in top-level ``schemas/``."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from patchstream.agent.memory import Memory
from patchstream.agent.runs import Run, RunEvent
from patchstream.agent.sessions import Session
from patchstream.schemas.chunks import Chunk
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.graph import Edge, Symbol
from patchstream.schemas.state import FileDelta, FileState
from patchstream.schemas.traces import TraceEvent

CONTRACTS: dict[str, type[BaseModel]] = {
    "patch-event.v1": PatchEvent,
    "file-delta.v1": FileDelta,
    "file-state.v1": FileState,
    "symbol.v1": Symbol,
    "edge.v1": Edge,
    "chunk.v1": Chunk,
    "run-event.v1": RunEvent,  # the run-events topic
    "run.v1": Run,
    "session.v1": Session,
    "memory.v1": Memory,
    "trace-event.v1": TraceEvent,  # the trace-events topic
}


def render_schemas() -> dict[str, str]:
    """File name -> JSON text, deterministic so the checked-in copies can be diffed."""
    rendered: dict[str, str] = {}
    for name, model in CONTRACTS.items():
        schema = model.model_json_schema(mode="serialization")
        schema["$id"] = f"https://patchstream.dev/schemas/{name}.schema.json"
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        rendered[f"{name}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return rendered


def write_schemas(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, text in render_schemas().items():
        target = directory / file_name
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def drifted_schemas(directory: Path) -> list[str]:
    """Names of schema files that are missing or differ from the models."""
    return [
        file_name
        for file_name, text in render_schemas().items()
        if not (directory / file_name).is_file()
        or (directory / file_name).read_text(encoding="utf-8") != text
    ]
