"""Python SDK for agents: publish file writes through the gateway.

from patchstream.client import PatchClient
client = PatchClient("http://127.0.0.1:8730", api_key="...")
receipt = client.write_file("shop", "src/app.py", new_text, session_id="run-7")
client.delete_file("shop", "src/old.py")
"""

from __future__ import annotations

from typing import Any

import httpx

from patchstream.errors import PatchstreamError


class PatchClientError(PatchstreamError):
    """The gateway refused the write or could not be reached."""


class PatchClient:
    def __init__(self, url: str, api_key: str, timeout_s: float = 10.0) -> None:
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout_s
        )

    def write(self, writes: list[dict[str, Any]]) -> dict[str, Any]:
        """Publish several writes at once; returns ``event_ids`` and a ``read_token``."""
        try:
            response = self.http.post("/v1/patches", json={"writes": writes})
        except httpx.TransportError as exc:
            raise PatchClientError(f"gateway unreachable: {exc}") from exc
        if response.status_code != 202:
            raise PatchClientError(f"gateway answered {response.status_code}: {response.text}")
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
