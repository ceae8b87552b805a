"""A small client of the query service's HTTP API (used by the CLI and the MCP server)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from patchstream.errors import PatchstreamError
from patchstream.settings import QuerySettings


class QueryServiceError(PatchstreamError):
    """The query service answered with an error or could not be reached."""


class QueryClient:
    def __init__(self, settings: QuerySettings, timeout_s: float = 60.0) -> None:
        self.url = settings.url
        self.http = httpx.Client(
            base_url=settings.url,
            headers={"Authorization": f"Bearer {settings.api_key.get_secret_value()}"},
            timeout=timeout_s,
        )

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise QueryServiceError(
                f"query service unreachable at {self.url} ({exc}); is `patchstream up` running?"
            ) from exc
        if response.status_code >= 400:
            raise QueryServiceError(f"{response.status_code}: {response.text}")
        return None if response.status_code == 204 else response.json()

    def resolve(self, name_or_id: str, repo: str | None = None, ref: str | None = None) -> str:
        """A symbol id for a name (the first match) or an id as given."""
        if "::" in name_or_id:
            return name_or_id
        params = {"name": name_or_id, **({"repo": repo} if repo else {}),
                  **({"ref": ref} if ref else {})}  # fmt: skip
        symbols = self.call("GET", "/v1/symbols", params=params)["symbols"]
        if not symbols:
            raise QueryServiceError(f"no symbol named {name_or_id!r}")

        def preference(symbol: dict[str, Any]) -> tuple[bool, bool, str]:
            # Code over modules and files of the same name; exact qualified names first.
            return (
                symbol["kind"] in ("module", "file"),
                symbol["qualified_name"] != name_or_id,
                str(symbol["id"]),
            )

        return str(min(symbols, key=preference)["id"])

    def walk(
        self, kind: str, symbol_id: str, depth: int, ref: str = "main",
        resolution: str = "inferred",
    ) -> Any:  # fmt: skip
        return self.call("GET", f"/v1/symbols/{quote(symbol_id, safe='/:')}/{kind}",
                         params={"depth": depth, "ref": ref, "resolution": resolution})  # fmt: skip

    def symbol(self, symbol_id: str, ref: str = "main") -> Any:
        return self.call("GET", f"/v1/symbols/{quote(symbol_id, safe='/:')}", params={"ref": ref})

    def close(self) -> None:
        self.http.close()
