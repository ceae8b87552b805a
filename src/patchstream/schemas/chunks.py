"""Vector contracts: content-hashed chunks of code."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from patchstream.schemas.graph import SymbolKind


class Chunk(BaseModel):
    """One embeddable piece of a file, owned by one symbol.

    ``content_hash`` is xxh3-128 of the normalized text (line endings, trailing spaces and
    common indentation removed), so a chunk that moves keeps its hash and its embedding.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="<symbol id>#<part>")
    symbol_id: str
    path: str
    kind: SymbolKind
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    content_hash: str
    tokens: int = Field(ge=0)
    text: str
