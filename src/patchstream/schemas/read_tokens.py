"""Read-your-writes tokens: which file versions a client wants to see applied.

A token is base64url JSON ``{"t": tenant, "w": [[repo, ref, path, version], ...]}``. It grants
nothing: the query service only answers it for the caller's own tenant.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass

from patchstream.errors import ContractError
from patchstream.http.security import safe_json
from patchstream.schemas.events import PatchEvent, view_ref


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
    # A workspace's write is read back through its overlay (``main~agent-42``).
    writes = [[e.repo, view_ref(e.ref, e.workspace), e.path, e.version] for e in events]
    writes += [
        [e.repo, view_ref(e.ref, e.workspace), e.old_path, e.version] for e in events if e.old_path
    ]
    payload = json.dumps({"t": tenants.pop(), "w": writes}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def parse_read_token(token: str, max_writes: int = 1000) -> tuple[str, list[PendingWrite]]:
    """Tenant and writes of a token; ContractError for a malformed, deeply nested or oversized
    one (it would cost a store read per write)."""
    try:
        padded = token + "=" * (-len(token) % 4)
        try:
            data = safe_json(base64.urlsafe_b64decode(padded.encode()))
        except ContractError as exc:  # its message holds decoder internals, not a reason
            raise ContractError("malformed read token: not one `emit` or the gateway returned"
                                ) from exc  # fmt: skip
        if not isinstance(data, dict) or not isinstance(data.get("w"), list):
            raise ContractError("malformed read token: not a token object")
        if len(data["w"]) > max_writes:
            raise ContractError(f"read token names {len(data['w'])} writes; at most {max_writes}")
        writes = [PendingWrite(str(r), str(f), str(p), int(v)) for r, f, p, v in data["w"]]
        return str(data["t"]), writes
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise ContractError("malformed read token") from exc
