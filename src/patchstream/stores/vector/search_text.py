"""The analyzers of search text: Milvus's standard one, and the one made for code that the
in-process copy (``search_index``) ranks with."""

from __future__ import annotations

import functools
import re

_TOKEN = re.compile(r"\w+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SUFFIXES = ("ing", "es", "ed", "s")


def tokens(text: str) -> list[str]:
    """Milvus's standard analyzer: word characters, lowercased."""
    return _TOKEN.findall(text.lower())


def code_tokens(text: str) -> list[str]:
    """The copy's analyzer: each word lowercased and stemmed, and, for an identifier made of
    parts (``snake_case``, ``camelCase``, ``HTTPServer``), each part too."""
    found: list[str] = []
    for word in _TOKEN.findall(text):
        found.extend(_word_tokens(word))
    return found


@functools.lru_cache(maxsize=1 << 16)
def _word_tokens(word: str) -> tuple[str, ...]:
    whole = _stem(word.lower())
    parts = [_stem(p.lower()) for piece in word.split("_") for p in _PART.findall(piece)]
    return (whole, *parts) if len(parts) > 1 else (whole,)


def _stem(word: str) -> str:
    """Plural and verb endings off, twice, then a final ``e``, so that ``settings``/
    ``setting`` and ``parse``/``parsed``/``parses``/``parsing`` meet; short words stay."""
    for _ in range(2):
        for suffix in _SUFFIXES:
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        else:
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word
