"""Content hashes: xxh3-128 in hex, over raw bytes (files) or normalized text (chunks)."""

from __future__ import annotations

import textwrap

import xxhash


def hash_bytes(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def normalize_code(text: str) -> str:
    """Text whose hash survives moves: LF endings, no trailing spaces, no common indent."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return textwrap.dedent("\n".join(lines)).strip("\n")


def hash_code(text: str) -> str:
    return hash_bytes(normalize_code(text).encode("utf-8"))
