"""A small client of the query service's HTTP API (used by the CLI and the MCP server)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx

from patchstream.config.settings import QuerySettings
from patchstream.errors import PatchstreamError

MAX_NAMED = 8  # symbols one name walks from; past it the caller is told to name one


def _tier(symbol: Any) -> int:
    """Functions, methods and classes (what is called) before variables, modules and files."""
    return {"function": 0, "class": 0, "interface": 0, "variable": 1}.get(symbol["kind"], 2)


def merge_walks(kind: str, answers: list[dict[str, Any]], more: int) -> dict[str, Any]:
    """One answer for the walks of every symbol a name stands for: each row says whose it is
    (``of``), every walked id is in ``symbol_ids``, and ``more_named`` counts the matches left
    out past ``MAX_NAMED``. ``symbol_id`` names the walked symbol only when there was one:
    with two, the first's id over both's rows credited ``Session.request``'s callers to the
    module-level ``request`` (callers precision 0.962 -> 0.923 on requests)."""
    merged = dict(answers[0])
    merged[kind] = [{**row, "of": answer["symbol_id"]} for answer in answers
                    for row in answer[kind]]  # fmt: skip
    merged["symbol_ids"] = [answer["symbol_id"] for answer in answers]
    if len(answers) > 1:
        merged["symbol_id"] = None
    merged["more_named"] = more
    return merged


def preferred_symbols(symbols: list[Any], name: str) -> list[Any]:
    """What a name stands for, best first: what can be called before variables, and those
    before modules and files; in a tier, those whose qualified name it is exactly (a
    module-level ``request`` beside ``Session.request``) lead; ties by id, so the same
    question answers alike."""
    return sorted(symbols, key=lambda s: (_tier(s), s["qualified_name"] != name, str(s["id"])))


class QueryServiceError(PatchstreamError):
    """The query service answered with an error (``status``) or could not be reached
    (``status`` None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def error_line(status: int, body: str) -> str:
    """One line for an error answer: FastAPI's ``detail`` as a sentence, a validation error
    as ``field: what is wrong`` (never the raw JSON)."""
    try:
        detail = json.loads(body).get("detail", body)
    except (ValueError, AttributeError):
        detail = body
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        detail = detail["message"]  # a structured refusal: its sentence
    if isinstance(detail, list):
        said = []
        for error in detail[:3]:
            if isinstance(error, dict):
                where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body", "query"))
                said.append(f"{where}: {error.get('msg', '')}" if where else str(error.get("msg")))
        detail = "; ".join(said) or body
    text = " ".join(str(detail).split())
    return f"{status}: {text[:500]}"


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
            raise self.fail(
                f"query service unreachable at {self.url} ({exc}); is `patchstream up` running?"
            ) from exc
        if response.status_code >= 400:
            raise self.fail(error_line(response.status_code, response.text), response.status_code)
        return None if response.status_code == 204 else response.json()

    def fail(self, message: str, status: int | None = None) -> Exception:
        """The error to raise (a subclass turns it into its caller's kind of error)."""
        return QueryServiceError(message, status)

    def named(self, name: str, repo: str | None = None, ref: str | None = None) -> list[Any]:
        """The symbols a bare name stands for, best first (``preferred_symbols``)."""
        params = {"name": name, **({"repo": repo} if repo else {}),
                  **({"ref": ref} if ref else {})}  # fmt: skip
        symbols = self.call("GET", "/v1/symbols", params=params)["symbols"]
        if not symbols:
            where = f" in {repo}" if repo else ""
            raise self.fail(f"404: no symbol named {name!r}{where}", 404)
        return preferred_symbols(symbols, name)

    def walk_named(
        self, kind: str, name_or_id: str, depth: int, repo: str | None = None,
        ref: str = "main", resolution: str = "inferred",
    ) -> dict[str, Any]:  # fmt: skip
        """``walk`` from every symbol a name stands for, not one picked by id: ``send`` may
        be ``Session.send`` and ``HTTPAdapter.send``, and who calls ``send`` is who calls
        any of them. Only the best tier of ``preferred_symbols`` is walked (a method, not the
        variable of the same name); ``merge_walks`` says how the answers combine."""
        if "::" in name_or_id:
            ids, more = [name_or_id], 0
        else:
            named = self.named(name_or_id, repo, ref)
            named = [s for s in named if _tier(s) == _tier(named[0])]
            ids, more = [str(s["id"]) for s in named[:MAX_NAMED]], max(0, len(named) - MAX_NAMED)
        answers = [self.walk(kind, symbol_id, depth, ref, resolution) for symbol_id in ids]
        return merge_walks(kind, answers, more)

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
