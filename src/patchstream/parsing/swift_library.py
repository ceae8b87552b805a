"""The standard library's value types and the protocols they conform to, for Swift: an
extension of a protocol (``extension StringProtocol { func wrapped() }``) is a member of
every conforming type, and a project's own extensions are mostly of these protocols."""

from __future__ import annotations

import tree_sitter as ts

from patchstream.parsing.source import Source

_EQUATABLE = ("Hashable", "Equatable")
_COMPARABLE = ("Comparable", *_EQUATABLE)
_SEQUENCE = ("Collection", "Sequence")
_BIDIRECTIONAL = ("BidirectionalCollection", *_SEQUENCE)
_ARRAY = ("RandomAccessCollection", "MutableCollection", "RangeReplaceableCollection",
          *_BIDIRECTIONAL, "ExpressibleByArrayLiteral")  # fmt: skip
_STRING = ("StringProtocol", *_BIDIRECTIONAL, "RangeReplaceableCollection", "TextOutputStream",
           *_COMPARABLE, "CustomStringConvertible", "LosslessStringConvertible")  # fmt: skip
_INTEGER = ("FixedWidthInteger", "BinaryInteger", "Numeric", "AdditiveArithmetic", "Strideable",
            *_COMPARABLE, "CustomStringConvertible", "LosslessStringConvertible")  # fmt: skip
_FLOAT = ("BinaryFloatingPoint", "FloatingPoint", "SignedNumeric", "Numeric",
          "AdditiveArithmetic", "Strideable", *_COMPARABLE, "CustomStringConvertible",
          "LosslessStringConvertible")  # fmt: skip

# A library type -> the protocols it conforms to, nearest first (itself excluded).
CONFORMANCES: dict[str, tuple[str, ...]] = {
    "String": _STRING,
    "Substring": _STRING,
    "Character": _COMPARABLE,
    "Array": _ARRAY,
    "ArraySlice": _ARRAY,
    "ContiguousArray": _ARRAY,
    "Dictionary": (*_SEQUENCE, "ExpressibleByDictionaryLiteral"),
    "Set": ("SetAlgebra", *_SEQUENCE, *_EQUATABLE),
    "Int": ("SignedInteger", *_INTEGER),
    "UInt": ("UnsignedInteger", *_INTEGER),
    "Double": _FLOAT,
    "Float": _FLOAT,
    "Bool": _EQUATABLE,
    "Range": ("RangeExpression", *_SEQUENCE),
    "ClosedRange": ("RangeExpression", *_SEQUENCE),
}


# A literal's type, by its node: ``"..".wrapped()`` is String's, ``[type].names()`` Array's (the
# grammar reads that ``[type]`` as an array type).
LITERALS = {
    "line_string_literal": "String", "multi_line_string_literal": "String",
    "raw_string_literal": "String", "array_literal": "Array", "array_type": "Array",
    "dictionary_literal": "Dictionary", "integer_literal": "Int", "real_literal": "Double",
    "boolean_literal": "Bool",
}  # fmt: skip


def conformances(name: str) -> tuple[str, ...]:
    """The protocols the library type ``name`` conforms to; () for any other name."""
    return CONFORMANCES.get(name, ())


# The standard library's sequence methods whose closure's parameter at this position is an
# element: ``args.compactMap { $0.name }``, ``items.first(where: { def in .. })``.
ELEMENT_CLOSURES = {
    **{name: 0 for name in ("forEach", "map", "compactMap", "flatMap", "filter", "first",
                            "last", "contains", "allSatisfy", "firstIndex", "lastIndex",
                            "drop", "prefix", "partition", "min", "max", "sorted")},
    "reduce": 1,
}  # fmt: skip


def _declared_parameters(closure: ts.Node) -> list[ts.Node] | None:
    """A closure's ``lambda_parameter`` nodes (``{ a, b in .. }``); None when it lists none
    and names its parameters ``$0``, ``$1``."""
    typed = closure.child_by_field_name("type")
    kinds = [] if typed is None else typed.named_children
    listed = next((c for c in kinds if c.type == "lambda_function_type_parameters"), None)
    if listed is None:
        return None
    return [p for p in listed.named_children if p.type == "lambda_parameter"]


def _untyped_name(parameter: ts.Node, src: Source) -> str | None:
    named = parameter.child_by_field_name("name")
    untyped = parameter.child_by_field_name("type") is None
    return src.text(named) if named is not None and untyped else None


def element_closure(callback: ts.Node, method: str, src: Source) -> str | None:
    """The name a closure passed to ``items.method`` gives an element: ``$0`` (``$1`` for
    ``reduce``), else the parameter it declares at that position without a type."""
    position = ELEMENT_CLOSURES.get(method)
    if position is None:
        return None
    declared = _declared_parameters(callback)
    if declared is None:
        return f"${position}"
    return _untyped_name(declared[position], src) if position < len(declared) else None


def closure_parameters(closure: ts.Node, src: Source) -> list[str]:
    """The names a closure binds without a declared type: its listed parameters, else the
    shorthand ``$0``-``$3``."""
    declared = _declared_parameters(closure)
    if declared is None:
        return [f"${index}" for index in range(4)]
    return [name for p in declared if (name := _untyped_name(p, src)) is not None]


def function_typed_parameters(function: ts.Node, src: Source) -> list[str]:
    """The types written for the parameters of a function's closure-typed parameters
    (``func performEvent(_ event: @escaping (EventMonitor) -> Void)`` -> EventMonitor)."""
    found = []
    for parameter in (c for c in function.named_children if c.type == "parameter"):
        closure = next((c for c in parameter.named_children if c.type == "function_type"), None)
        listed = closure.child_by_field_name("params") if closure is not None else None
        for item in listed.named_children if listed is not None else ():
            named = next((c for c in item.named_children if c.type == "user_type"), None)
            if item.type == "tuple_type_item" and named is not None:
                found.append("".join(src.text(named).split()))
    return found
