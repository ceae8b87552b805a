"""Walks that step through C macros: ``deflateInit(...)`` is a macro expanding to
``deflateInit_(...)``, and who calls ``deflateInit_`` is also whoever uses the macro. The
macro's row stays (it is where the call is written); the rows beyond it come at its depth."""

from __future__ import annotations

from collections.abc import Callable

from patchstream.parsing.c_language import is_macro
from patchstream.schemas.graph import CallResolution
from patchstream.stores.graph.base import Neighbor

MAX_MACRO_HOPS = 3  # a macro using a macro using a macro; no deeper


def through_macros(found: list[Neighbor], step: Callable[[str], list[Neighbor]]) -> list[Neighbor]:
    """``found`` and, for each macro among them, its own neighbours (``step``: one hop the
    same way), as if the macro were not there."""
    seen = {n.symbol.id for n in found}
    result = list(found)
    frontier = [n for n in found if is_macro(n.symbol.language, n.symbol.signature)]
    for _ in range(MAX_MACRO_HOPS):
        beyond = []
        for macro in frontier:
            for neighbor in step(macro.symbol.id):
                if neighbor.symbol.id in seen:
                    continue
                seen.add(neighbor.symbol.id)
                weaker = max(CallResolution(macro.resolution), CallResolution(neighbor.resolution),
                             key=lambda r: r.rank)  # fmt: skip
                reached = Neighbor(neighbor.symbol, macro.depth, weaker.value)
                result.append(reached)
                if is_macro(neighbor.symbol.language, neighbor.symbol.signature):
                    beyond.append(reached)
        frontier = beyond
    return result
