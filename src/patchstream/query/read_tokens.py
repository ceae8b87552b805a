"""Read-your-writes tokens: which file versions a client wants to see applied.

A token is base64url JSON ``{"t": tenant, "w": [[repo, ref, path, version], ...]}``. It grants
nothing: the query service only answers it for the caller's own tenant.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass

from patchstream.errors import ContractError
from patchstream.schemas.events import PatchEvent


@dataclass(frozen=True)
class PendingWrite:
    repo: str
    ref: str
    path: str
    version: int


def make_read_token(events: Iterable[PatchEvent]) -> str:
    events = list(events)
    if not events:
        raise ContractError("a read token needs at least one write")
    tenants = {e.tenant for e in events}
    if len(tenants) != 1:
        raise ContractError("a read token covers one tenant")
    writes = [[e.repo, e.ref, e.path, e.version] for e in events]
    writes += [[e.repo, e.ref, e.old_path, e.version] for e in events if e.old_path]
    payload = json.dumps({"t": tenants.pop(), "w": writes}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def parse_read_token(token: str) -> tuple[str, list[PendingWrite]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        writes = [PendingWrite(str(r), str(f), str(p), int(v)) for r, f, p, v in data["w"]]
        return str(data["t"]), writes
    except (ValueError, KeyError, TypeError) as exc:
        raise ContractError(f"malformed read token: {exc}") from exc
