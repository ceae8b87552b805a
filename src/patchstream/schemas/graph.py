"""Graph contracts: symbols (nodes) and edges, including unresolved cross-file references."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

REF_PREFIX = "ref:"


class SymbolKind(StrEnum):
    FILE = "file"
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    VARIABLE = "variable"
    INTERFACE = "interface"


class EdgeType(StrEnum):
    DEFINES = "DEFINES"
    CALLS = "CALLS"
    IMPORTS = "IMPORTS"
    INHERITS_FROM = "INHERITS_FROM"
    INSTANTIATES = "INSTANTIATES"
    OVERRIDES = "OVERRIDES"
    # A function's declared return type (a class or interface). Never materialized across
    # files: callers' walks read it through the reference's keys.
    RETURNS = "RETURNS"
    # A class a callback parameter of a function's parameter declares (``operate(init:
    # (source: Observable<T>, subscriber: Subscriber<R>) => void)``: to Observable and to
    # Subscriber; a constructor's: from its class). Read like RETURNS, never materialized.
    CALLBACK_PARAM = "CALLBACK_PARAM"


class CallResolution(StrEnum):
    """How sure a CALLS/INSTANTIATES edge is, strongest first.

    ``exact``: the target follows from a name binding (a definition, an import, an alias) or a
    declared type. ``runtime``: a traced command made the call (``patchstream trace``); it
    stands while both files keep the content they were traced with. ``inferred``: from a
    guess, a Python/JavaScript constructor call (``x = Foo()``) or an implementation of the
    interface method that was called.
    ``name-only``: no type is known; the repository has one method of that name (read at
    query time, never stored).
    """

    EXACT = "exact"
    RUNTIME = "runtime"
    INFERRED = "inferred"
    NAME_ONLY = "name-only"

    @property
    def rank(self) -> int:
        return _RESOLUTION_RANK[self]

    @classmethod
    def at_least(cls, weakest: CallResolution) -> list[str]:
        """The values a walk follows when ``weakest`` is the minimum asked for."""
        return [r.value for r in cls if r.rank <= weakest.rank]


_RESOLUTION_RANK = {"exact": 0, "runtime": 1, "inferred": 2, "name-only": 3}


class Reference(BaseModel):
    """A target outside the file, as written in the source, for the graph sink to resolve.

    ``name`` is the (possibly dotted) name as imported or written, ``""`` when a whole module is
    imported. ``module`` is the import path it came from, normalized per language (Python
    dotted and absolute, JS/TS path without extension relative to the repository root, Go
    import path, Java package, Rust ``crate::``-absolute path), or ``None`` when the name was not
    imported (a builtin, a global, an attribute of an unknown object).

    Its string form, used as an edge's ``dst``, is ``ref:<name>`` or ``ref:<name>@<module>``.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    module: str | None = None

    @classmethod
    def from_dst(cls, dst: str) -> Reference:
        """Inverse of :meth:`as_dst` (names never contain ``@``)."""
        if not dst.startswith(REF_PREFIX):
            raise ValueError(f"{dst!r} is not a reference")
        name, separator, module = dst[len(REF_PREFIX) :].partition("@")
        return cls(name=name, module=module if separator else None)

    def as_dst(self) -> str:
        return (
            f"{REF_PREFIX}{self.name}"
            if self.module is None
            else (f"{REF_PREFIX}{self.name}@{self.module}")
        )


class Symbol(BaseModel):
    """A node of the code graph. Ids are ``repo::path::qualified.name`` and do not depend on lines.

    The File node's id is ``repo::path``; the per-file Module node's id is ``repo::path::<module>``.
    Tenant and ref are properties added by the sinks, not part of the id.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    kind: SymbolKind
    name: str
    qualified_name: str
    path: str
    language: str | None = None
    start_line: int = Field(ge=1, description="1-based, inclusive")
    end_line: int = Field(ge=1, description="1-based, inclusive")
    signature: str | None = Field(
        default=None, description="Declaration without its body, whitespace collapsed"
    )
    doc: str | None = Field(default=None, description="First line of the docstring/comment")
    parent_id: str | None = None
    content_hash: str | None = Field(default=None, description="xxh3-128 of the symbol's text")
    alternative: bool = Field(
        default=False,
        description="Python: one of a name's definitions in different branches of an if/try; "
        "a later definition of the name does not hide it from other files",
    )


class Edge(BaseModel):
    """A directed edge. ``dst`` is a symbol id, or a reference string when ``ref`` is set."""

    model_config = ConfigDict(frozen=True)

    type: EdgeType
    src: str
    dst: str
    ref: Reference | None = None
    # Set on CALLS and INSTANTIATES edges (exact or inferred); None on the other types.
    resolution: CallResolution | None = None

    @model_validator(mode="after")
    def _dst_matches_ref(self) -> Self:
        if self.ref is not None and self.dst != self.ref.as_dst():
            raise ValueError(f"edge dst {self.dst!r} does not match its reference")
        if self.ref is None and self.dst.startswith(REF_PREFIX):
            raise ValueError(f"edge dst {self.dst!r} is a reference string but ref is missing")
        return self

    @classmethod
    def to_ref(cls, type_: EdgeType, src: str, ref: Reference) -> Edge:
        return cls(type=type_, src=src, dst=ref.as_dst(), ref=ref)

    def sort_key(self) -> tuple[str, str, str]:
        return (self.src, self.type.value, self.dst)
