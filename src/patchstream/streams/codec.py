"""Bytes on the bus <-> contracts, and dead letters that say what was wrong."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from patchstream.errors import ContractError
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.state import FileDelta
from patchstream.schemas.traces import TraceEvent

M = TypeVar("M", bound=BaseModel)


def _reason(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "message"
        parts.append(f"{where}: {error.get('msg')}")
    return "; ".join(parts)


def decode_event(raw: bytes | None, allowed_tenants: list[str] | None = None) -> PatchEvent:
    """A valid patch event, or :class:`ContractError` with a reason fit for the DLQ."""
    if raw is None:
        raise ContractError("empty message (tombstone) on patch-events", code="tombstone")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ContractError(f"not JSON: {exc}", code="not_json") from exc
    if not isinstance(data, dict):
        raise ContractError(f"expected a JSON object, got {type(data).__name__}", code="not_object")
    version = data.get("schema_version", 1)
    if version != 1:
        raise ContractError(
            f"schema_version {version!r} is not supported (this worker reads 1)",
            code="schema_version",
        )
    try:
        event = PatchEvent.model_validate(data)
    except ValidationError as exc:
        raise ContractError(f"invalid patch event: {_reason(exc)}", code="invalid_event") from exc
    if allowed_tenants and event.tenant not in allowed_tenants:
        raise ContractError(f"unknown tenant {event.tenant!r}", code="unknown_tenant")
    return event


def decode_delta(raw: bytes | None) -> FileDelta:
    return _decode(FileDelta, raw, "file-deltas", "file delta", "invalid_delta")


def decode_trace(raw: bytes | None) -> TraceEvent:
    return _decode(TraceEvent, raw, "trace-events", "trace event", "invalid_trace")


def _decode(model: type[M], raw: bytes | None, topic: str, what: str, code: str) -> M:
    if raw is None:
        raise ContractError(f"empty message (tombstone) on {topic}", code="tombstone")
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise ContractError(f"invalid {what}: {_reason(exc)}", code=code) from exc


def encode(model: PatchEvent | FileDelta | TraceEvent) -> bytes:
    return model.model_dump_json().encode("utf-8")


def dead_letter(
    *,
    stage: str,
    reason: str,
    value: bytes | None,
    key: bytes | None,
    topic: str,
    partition: int,
    offset: int,
    attempts: int = 1,
    code: str | None = None,
) -> bytes:
    """The DLQ record: the rejected message, untouched, with why and where it was rejected."""
    record: dict[str, Any] = {
        "stage": stage,
        "code": code,
        "reason": reason,
        "attempts": attempts,
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "key": key.decode("utf-8", "replace") if key is not None else None,
        "rejected_at": datetime.now(UTC).isoformat(),
    }
    if value is None:
        record["value"] = None
    else:
        try:
            record["value"] = value.decode("utf-8")
        except UnicodeDecodeError:
            record["value_base64"] = base64.b64encode(value).decode("ascii")
    return json.dumps(record).encode("utf-8")
