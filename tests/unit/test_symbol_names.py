"""Which symbols a bare name stands for, and in what order (``query.client``)."""

from __future__ import annotations

from typing import Any

from patchstream.query.client import preferred_symbols


def _symbol(symbol_id: str, kind: str) -> dict[str, Any]:
    return {"id": symbol_id, "kind": kind, "qualified_name": symbol_id.rsplit("::", 1)[1]}


def test_what_is_called_comes_first_then_variables_then_modules() -> None:
    found = [
        _symbol("r::request.py::request", "module"),
        _symbol("r::models.py::Response.request", "variable"),
        _symbol("r::sessions.py::Session.request", "function"),
        _symbol("r::api.py::request", "function"),
    ]
    ordered = [s["id"] for s in preferred_symbols(found, "request")]
    assert ordered == [
        "r::api.py::request",  # its qualified name is the name: it leads its tier
        "r::sessions.py::Session.request",
        "r::models.py::Response.request",
        "r::request.py::request",
    ]


def test_the_order_does_not_depend_on_the_order_the_store_answered_in() -> None:
    found = [_symbol(f"r::m{i}.py::C{i}.area", "function") for i in (3, 1, 2)]
    assert preferred_symbols(found, "area") == preferred_symbols(list(reversed(found)), "area")
    assert [s["id"] for s in preferred_symbols(found, "area")] == [
        "r::m1.py::C1.area", "r::m2.py::C2.area", "r::m3.py::C3.area",
    ]  # fmt: skip
