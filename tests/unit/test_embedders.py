from __future__ import annotations

import json
import math

import httpx
import pytest

from patchstream.config.settings import EmbeddingSettings
from patchstream.embedders.factory import create_embedder
from patchstream.embedders.hashing import HashingEmbedder, split_identifiers
from patchstream.embedders.openai import OpenAIEmbedder
from patchstream.errors import ConfigError, EmbedderError


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_identifiers_split_on_case_and_underscores() -> None:
    assert split_identifiers("parseHTTPResponse_v2") == [
        "parse",
        "http",
        "response",
        "parsehttpresponse",
        "v2",
    ]
    assert split_identifiers("load_config") == ["load", "config"]


def test_hashing_embedder_is_deterministic_normalized_and_lexical() -> None:
    embedder = HashingEmbedder(dim=256)
    a, b, c = embedder.embed(["def load_config(path)", "loadConfig(path)", "render_html_page()"])
    assert embedder.embed(["def load_config(path)"])[0] == a
    assert math.isclose(sum(v * v for v in a), 1.0, rel_tol=1e-9)
    assert _cosine(a, b) > _cosine(a, c)
    assert len(embedder.embed(["x"] * 2500)) == 2500  # batched internally


def test_factory_builds_the_configured_embedder() -> None:
    assert create_embedder(EmbeddingSettings(kind="hashing", dim=32)).dim == 32
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        create_embedder(EmbeddingSettings(kind="openai"))


def _endpoint(fail_first: int, status: int = 503) -> tuple[httpx.MockTransport, list[int]]:
    sizes: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sizes.append(len(body["input"]))
        if len(sizes) <= fail_first:
            return httpx.Response(status, text="busy")
        data = [
            {"index": i, "embedding": [float(len(t)), 1.0, 0.0]}
            for i, t in reversed(list(enumerate(body["input"])))
        ]
        return httpx.Response(200, json={"data": data})

    return httpx.MockTransport(handle), sizes


def test_openai_embedder_batches_orders_and_retries() -> None:
    transport, sizes = _endpoint(fail_first=2)
    embedder = OpenAIEmbedder(
        "http://embed.local", "m", dim=3, batch_size=4, backoff_s=0.0, transport=transport
    )
    vectors = embedder.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert sizes == [4, 4, 4, 1]  # two retried failures, then two batches
    lengths = [v[0] / math.sqrt(v[0] ** 2 + 1) for v in vectors]
    assert lengths == sorted(lengths)  # order follows "index", not arrival


def test_openai_embedder_gives_up_with_a_clear_error() -> None:
    transport, _ = _endpoint(fail_first=99)
    embedder = OpenAIEmbedder(
        "http://embed.local", "m", dim=3, max_retries=2, backoff_s=0.0, transport=transport
    )
    with pytest.raises(EmbedderError, match="failed after 3 tries: HTTP 503"):
        embedder.embed(["a"])
    transport, sizes = _endpoint(fail_first=99, status=401)
    embedder = OpenAIEmbedder("http://embed.local", "m", dim=3, transport=transport)
    with pytest.raises(EmbedderError, match="HTTP 401"):
        embedder.embed(["a"])
    assert sizes == [1]  # a 4xx other than 408/409/425/429 is not retried


def test_openai_embedder_checks_the_dimension() -> None:
    transport, _ = _endpoint(fail_first=0)
    embedder = OpenAIEmbedder("http://embed.local", "m", dim=8, transport=transport)
    with pytest.raises(EmbedderError, match="expected 1 of 8"):
        embedder.embed(["a"])


def test_minilm_embeds_offline_with_meaning() -> None:
    from patchstream.embedders.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    assert embedder.dim == 384 and embedder.name == "minilm-l6-v2-384"
    query, near, far = embedder.embed(
        ["add two numbers", "def sum_values(a, b):\n    return a + b", "class HttpServer: pass"]
    )
    assert _cosine(query, near) > _cosine(query, far)
