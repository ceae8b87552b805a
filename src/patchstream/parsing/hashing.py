"""Content hashes: xxh3-128 in hex, over raw bytes (files) or normalized text (chunks)."""

from __future__ import annotations

import xxhash


def hash_bytes(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def normalize_code(text: str) -> str:
    """Text whose hash survives moves: LF endings, no trailing spaces, no common indent."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(_dedent(lines)).strip("\n")


def _dedent(lines: list[str]) -> list[str]:
    """``textwrap.dedent`` for right-stripped lines, without its regular expressions (it was
    a tenth of extraction time): the common leading run of spaces and tabs is removed."""
    margin: str | None = None
    for line in lines:
        if not line:
            continue
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if margin is None or margin.startswith(indent):
            margin = indent
        elif not indent.startswith(margin):
            common = 0
            while margin[common] == indent[common]:
                common += 1
            margin = margin[:common]
        if not margin:
            return lines
    if not margin:
        return lines
    cut = len(margin)
    return [line[cut:] for line in lines]


def hash_code(text: str) -> str:
    return hash_bytes(normalize_code(text).encode("utf-8"))
