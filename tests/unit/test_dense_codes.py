"""Embeddings as Milvus keeps them (layout v3): int8 codes and a scale, base64."""

from __future__ import annotations

import numpy as np
import pytest

from patchstream.stores.vector.dense_codes import (
    decode,
    decoded_vector,
    encode,
    encoded_length,
    quantize,
)
from patchstream.stores.vector.search_index import IndexedRow, TenantIndex


def test_codes_round_trip_as_the_search_copy_codes_them() -> None:
    rng = np.random.default_rng(7)
    for dim in (3, 64, 384, 1536):
        vector = rng.standard_normal(dim).astype(np.float32) * 5
        text = encode(vector)
        assert len(text) == encoded_length(dim) and text.isascii()
        codes, scale = decode(text, dim)
        expected, expected_scale = quantize(vector / np.linalg.norm(vector))
        assert np.array_equal(codes, expected) and scale == pytest.approx(expected_scale)
        # a reused embedding (read back from its codes) codes to the same codes again
        assert np.array_equal(decode(encode(decoded_vector(text, dim)), dim)[0], codes)
    zero = decode(encode([0.0, 0.0, 0.0]), 3)
    assert not zero[0].any() and zero[1] == 0.0


@pytest.mark.parametrize(
    "hostile",
    ["", "not base64!", "AAAA", encode([1.0, 2.0, 3.0, 4.0]), "A" * 10_000, "\x00\n" * 4],
)
def test_codes_of_another_length_or_alphabet_are_refused(hostile: str) -> None:
    with pytest.raises(ValueError):
        decode(hostile, 3)


def test_rows_added_as_codes_rank_as_rows_added_as_vectors() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((40, 16)).astype(np.float32)
    as_floats, as_codes = TenantIndex(16), TenantIndex(16)
    for i, vector in enumerate(vectors):
        as_floats.add(IndexedRow(f"p{i}", "s", "function", f"m{i}.py", f"f{i}", vector))
        as_codes.add(IndexedRow(f"p{i}", "s", "function", f"m{i}.py", f"f{i}", (),
                                codes=decode(encode(vector), 16)))  # fmt: skip
    assert np.array_equal(as_floats.by_dim[:, :40], as_codes.by_dim[:, :40])
    assert np.allclose(as_floats.scale[:40], as_codes.scale[:40])
