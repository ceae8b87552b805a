"""Python SDK for agents: publish file writes through the gateway.

from patchstream.client import PatchClient
client = PatchClient("http://127.0.0.1:8730", api_key="...")
receipt = client.write_file("shop", "src/app.py", new_text, session_id="run-7")
client.delete_file("shop", "src/old.py")
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx

from patchstream.errors import PatchstreamError


class PatchClientError(PatchstreamError):
    """The gateway refused the write or could not be reached."""


class PatchRefused(PatchClientError):  # noqa: N818 - a condition, as a caller decides on it
    """The gateway answered that this request will not be taken as it is (a 4xx other than
    408 and 429): sending it again changes nothing."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class PatchClient:
    def __init__(
        self, url: str, api_key: str, timeout_s: float = 10.0, workspace: str | None = None,
        compress: bool = False,
    ) -> None:  # fmt: skip
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout_s
        )
        self.workspace = workspace  # writes go to this agent workspace unless a write says
        self.compress = compress  # gzip request bodies (the gateway inflates them)

    def write(self, writes: list[dict[str, Any]], **request: Any) -> dict[str, Any]:
        """Publish several writes at once; returns ``event_ids``, a ``read_token`` and the
        ``version`` of the first. ``request``: ``source="snapshot"`` and a ``batch_id`` for a
        directory's files (what ``patchstream index`` sends)."""
        if self.workspace is not None:
            writes = [{"workspace": self.workspace, **w} for w in writes]
        return self._accepted("/v1/patches", {"writes": writes, **request})

    def import_discussions(
        self, repo: str, ref: str, lines: list[str], first_line: int = 1,
        pull_numbers: list[int] | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Send part of a discussions export (at most 1,000 lines); the gateway reads it."""
        return self._accepted("/v1/discussions", {
            "repo": repo, "ref": ref, "lines": lines, "first_line": first_line,
            "pull_numbers": pull_numbers or [],
        })  # fmt: skip

    def traces(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """Publish trace events (``patchstream trace``); the key's tenant is theirs."""
        return self._accepted("/v1/traces", {"events": events})

    def _accepted(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body``; the gateway's 202 answer, or PatchClientError."""
        try:
            if self.compress:
                packed = gzip.compress(json.dumps(body).encode(), compresslevel=6)
                response = self.http.post(path, content=packed, headers={
                    "content-type": "application/json", "content-encoding": "gzip"})  # fmt: skip
            else:
                response = self.http.post(path, json=body)
        except httpx.TransportError as exc:
            raise PatchClientError(f"gateway unreachable: {exc}") from exc
        if response.status_code != 202:
            message = f"gateway answered {response.status_code}: {response.text[:2000]}"
            if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
                raise PatchRefused(message, response.status_code)
            raise PatchClientError(message)
        return dict(response.json())

    def write_file(
        self, repo: str, path: str, content: str, ref: str = "main", **fields: Any
    ) -> dict[str, Any]:
        return self.write([{"repo": repo, "ref": ref, "path": path, "op": "upsert",
                            "content": content, **fields}])  # fmt: skip

    def delete_file(self, repo: str, path: str, ref: str = "main", **fields: Any) -> dict[str, Any]:
        return self.write([{"repo": repo, "ref": ref, "path": path, "op": "delete", **fields}])

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> PatchClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class RunConflictError(PatchClientError):
    """409 from the runs API: a stale ``state_version`` or an event the run's status refuses.
    ``current_version`` is set for a stale version; ``allowed`` for a refused event."""

    def __init__(self, message: str, detail: dict[str, Any]) -> None:
        super().__init__(message)
        self.detail = detail
        self.current_version: int | None = detail.get("current_version")
        self.allowed: list[str] = list(detail.get("allowed", []))


class RunClient:
    """Runs and sessions in the query service: durable execution state for an agent worker.

    from patchstream.client import RunClient
    runs = RunClient("http://127.0.0.1:8731", api_key="...")
    run = runs.start("fix the tax rounding", repo="shop", session_id="s-1")
    run = runs.record(run, {"type": "ActionProposed", "action_id": "a1", "tool": "edit"})
    state = runs.resume(run["run_id"])  # after a crash: uncertain actions, code changed since
    """

    def __init__(self, url: str, api_key: str, timeout_s: float = 30.0) -> None:
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout_s
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise PatchClientError(f"query service unreachable: {exc}") from exc
        if response.status_code == 409:
            detail = response.json().get("detail", {})
            raise RunConflictError(str(detail.get("message", detail)), detail)
        if response.status_code >= 400:
            raise PatchClientError(f"query service answered {response.status_code}: "
                                   f"{response.text}")  # fmt: skip
        return response.json()

    def create(self, goal: str, **fields: Any) -> dict[str, Any]:
        return dict(self._call("POST", "/v1/runs", json={"goal": goal, **fields}))

    def start(self, goal: str, **fields: Any) -> dict[str, Any]:
        """Create the run and move it to RUNNING."""
        run = self.create(goal, **fields)
        return self.transition(run, "RUNNING")

    def get(self, run_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/v1/runs/{run_id}"))

    def record(
        self, run: dict[str, Any], *events: dict[str, Any], actor: str | None = None
    ) -> dict[str, Any]:
        """Append events to ``run`` as read (its ``state_version``); returns the new snapshot.
        A stale snapshot raises ``RunConflictError``: read the run again and decide again."""
        body = {"state_version": run["state_version"], "events": list(events), "actor": actor}
        return dict(self._call("POST", f"/v1/runs/{run['run_id']}/events", json=body))

    def transition(self, run: dict[str, Any], to: str, reason: str | None = None) -> dict[str, Any]:
        body = {"state_version": run["state_version"], "to": to, "reason": reason}
        return dict(self._call("POST", f"/v1/runs/{run['run_id']}/transition", json=body))

    def checkpoint(self, run: dict[str, Any], note: str | None = None) -> dict[str, Any]:
        return self.record(run, {"type": "CheckpointCreated", "text": note})

    def events(self, run_id: str, after: int = 0) -> list[dict[str, Any]]:
        return list(
            self._call("GET", f"/v1/runs/{run_id}/events", params={"after": after})["events"]
        )

    def resume(self, run_id: str, budget_tokens: int = 4000) -> dict[str, Any]:
        return dict(self._call("GET", f"/v1/runs/{run_id}/resume",
                               params={"budget_tokens": budget_tokens}))  # fmt: skip

    def session(self, session_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/v1/sessions/{session_id}"))

    def note(self, session_id: str, text: str, kind: str = "note", **fields: Any) -> dict[str, Any]:
        body = {"text": text, "kind": kind, **fields}
        return dict(self._call("POST", f"/v1/sessions/{session_id}/scratchpad", json=body))

    def diff(
        self, session_id: str, path: str, diff: str, repo: str | None = None
    ) -> dict[str, Any]:
        body = {"path": path, "diff": diff, "repo": repo}
        return dict(self._call("POST", f"/v1/sessions/{session_id}/diffs", json=body))

    def tool_output(self, session_id: str, tool: str, **fields: Any) -> dict[str, Any]:
        body = {"tool": tool, **fields}
        return dict(self._call("POST", f"/v1/sessions/{session_id}/tool-output", json=body))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RunClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
