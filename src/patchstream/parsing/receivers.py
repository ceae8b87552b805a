"""What a receiver is, from one file's syntax tree: the type facts behind ``x.m()`` calls.

Python, TypeScript (parameters, fields, parameter properties, variables and ``new``) and Go
(method receivers, parameters, struct fields, ``var``, ``x := T{}`` / ``&T{}`` / ``NewT()``).
Facts are flow-insensitive and come from what the code declares or obviously constructs:

- parameter annotations (``def f(s: Session)``), annotated assignments (``x: Foo = ...``,
  ``self.x: Foo``, class-level ``x: Foo``) and function return annotations;
- assignments from a call (``x = Foo()``, ``self.adapter = HTTPAdapter()``): the callee is
  the type when it is a class, or a function whose return annotation names one;
- loops and comprehensions over a call whose return annotation is a container
  (``-> list[T]``);
- ``except Error as e`` and ``x = cast(T, value)``;
- ``self.command = command``: the attribute takes the parameter's (or local's) type;
- ``with Foo() as x`` (``__enter__`` returning the object, as it nearly always does);
- aliases (``handler = on_event``, class-level ``context_class = Context``): a call of the
  alias is a call of what it names.

A name bound to two different types in one scope has no type (precision over recall). What
this cannot see: types flowing through containers, ``getattr``, monkey-patching, values
returned by functions without annotations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import tree_sitter as ts

from patchstream.parsing.languages import get_language
from patchstream.parsing.node_text import without_generics
from patchstream.parsing.source import Source

_PYTHON_FACTS = """
(typed_parameter (identifier) @name type: (type) @type) @fact
(typed_default_parameter name: (identifier) @name type: (type) @type) @fact
(assignment left: (identifier) @name type: (type) @type) @fact
(assignment
  left: (attribute object: (identifier) @owner attribute: (identifier) @name)
  type: (type) @type) @fact
(assignment left: (identifier) @name right: (call function: [(identifier) (attribute)] @call)) @fact
(assignment
  left: (attribute object: (identifier) @owner attribute: (identifier) @name)
  right: (call function: [(identifier) (attribute)] @call)) @fact
(function_definition name: (identifier) @returns return_type: (type) @type) @fact
(with_item value: (as_pattern (call function: [(identifier) (attribute)] @call)
  alias: (as_pattern_target (identifier) @name))) @fact
(assignment left: (identifier) @name right: [(identifier) (attribute)] @alias) @fact
(assignment
  left: (attribute object: (identifier) @owner attribute: (identifier) @name)
  right: (identifier) @alias) @fact
(for_statement left: (identifier) @name right: (call function: [(identifier) (attribute)] @call)
  ) @loop
(for_in_clause left: (identifier) @name right: (call function: [(identifier) (attribute)] @call)
  ) @loop
(except_clause value: (as_pattern [(identifier) (attribute)] @type
  alias: (as_pattern_target (identifier) @name))) @fact
(assignment left: (identifier) @name
  right: (call function: [(identifier) (attribute)] @cast
    arguments: (argument_list . [(identifier) (attribute) (string)] @type))) @fact
"""
_CASTS = frozenset({"cast", "t.cast", "typing.cast"})

_TS_TYPE = "[(type_identifier) (nested_type_identifier) (generic_type)]"
_TS_NEW = "(new_expression constructor: [(identifier) (member_expression)] @call)"
_TYPESCRIPT_FACTS = f"""
(required_parameter pattern: (identifier) @name type: (type_annotation {_TS_TYPE} @type)) @fact
(optional_parameter pattern: (identifier) @name type: (type_annotation {_TS_TYPE} @type)) @fact
(required_parameter (accessibility_modifier) pattern: (identifier) @name
  type: (type_annotation {_TS_TYPE} @type)) @field
(public_field_definition name: (property_identifier) @name
  type: (type_annotation {_TS_TYPE} @type)) @fact
(public_field_definition name: (property_identifier) @name value: {_TS_NEW}) @fact
(variable_declarator name: (identifier) @name type: (type_annotation {_TS_TYPE} @type)) @fact
(variable_declarator name: (identifier) @name value: {_TS_NEW}) @fact
(assignment_expression
  left: (member_expression object: (this) @owner property: (property_identifier) @name)
  right: {_TS_NEW}) @fact
"""

_GO_TYPE = "[(type_identifier) (qualified_type) (pointer_type)]"
_GO_NEW = ("[(composite_literal type: [(type_identifier) (qualified_type)] @call) "
           "(unary_expression operand: (composite_literal type: [(type_identifier) "
           "(qualified_type)] @call)) (call_expression function: [(identifier) "
           "(selector_expression)] @call)]")  # fmt: skip
_GO_FACTS = f"""
(parameter_declaration name: (identifier) @name type: {_GO_TYPE} @type) @fact
(field_declaration name: (field_identifier) @name type: {_GO_TYPE} @type) @fact
(var_spec name: (identifier) @name type: {_GO_TYPE} @type) @fact
(short_var_declaration left: (expression_list . (identifier) @name)
  right: (expression_list . {_GO_NEW})) @fact
(function_declaration name: (identifier) @returns result: {_GO_TYPE} @type) @fact
"""

_WRAPPERS = re.compile(r"^(?:typing\.)?(?:Optional|Annotated|Final|ClassVar|Type|type)\[(.*)\]$")
_CONTAINER = re.compile(
    r"^(?:typing\.|t\.|abc\.|cabc\.|collections\.abc\.)?(?:List|list|Sequence|"
    r"MutableSequence|Iterable|Iterator|Generator|Set|set|FrozenSet|frozenset|Collection|"
    r"Tuple|tuple|Deque|deque)\[(.*)\]$"
)
DOTTED = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$")


@dataclass(frozen=True)
class TypeFact:
    """``name`` (an attribute of ``owner`` when set, e.g. ``self``) has type ``type_parts``.

    ``from_call``: the type is a callee (a class or a function's return), not a declaration.
    ``returns``: the fact is a function's return annotation (``name`` is the function).
    ``element``: the type is that of the elements (``for x in f()``; ``-> list[T]``).
    """

    node: ts.Node
    name: str
    type_parts: tuple[str, ...]
    owner: str | None = None
    from_call: bool = False
    returns: bool = False
    element: bool = False
    alias: bool = False  # ``name = other_name``: the name stands for what it names


@cache
def _facts_query(language: str) -> ts.Query | None:
    source = {"python": _PYTHON_FACTS, "typescript": _TYPESCRIPT_FACTS,
              "tsx": _TYPESCRIPT_FACTS, "go": _GO_FACTS}.get(language)  # fmt: skip
    return ts.Query(get_language(language), source) if source else None


def type_parts(text: str) -> tuple[str, ...] | None:
    """``Session``, ``"models.Request"``, ``Optional[Foo]``, ``Foo | None`` -> the dotted
    name's parts; containers and unions of several types -> None."""
    cleaned = "".join(text.split()).strip("\"'").lstrip("*&")  # Go pointers
    while match := _WRAPPERS.match(cleaned):
        cleaned = match.group(1).split(",", 1)[0].strip("\"'")
    options = [without_generics(o) for o in cleaned.split("|") if o not in ("None", "")]
    if len(options) != 1 or not DOTTED.match(options[0]):
        return None  # TypeScript's ``Subscriber<T>`` is a Subscriber
    return tuple(options[0].split("."))


def element_parts(text: str) -> tuple[str, ...] | None:
    """``list[Foo]``, ``Iterator["Foo"]``, ``tuple[Foo, ...]`` -> the elements' type."""
    match = _CONTAINER.match("".join(text.split()).strip("\"'"))
    if match is None:
        return None
    return type_parts(match.group(1).split(",", 1)[0])


def type_facts(tree: ts.Tree, language: str, src: Source) -> list[TypeFact]:
    query = _facts_query(language)
    if query is None:
        return []
    facts: list[TypeFact] = []
    for _, match in ts.QueryCursor(query).matches(tree.root_node):
        if "loop" in match:  # for x in f(): x is an element of what f returns
            text = "".join(src.text(match["call"][0]).split())
            if DOTTED.match(text):
                name, call = src.text(match["name"][0]), tuple(text.split("."))
                facts.append(TypeFact(match["loop"][0], name, call, from_call=True, element=True))
            continue
        if "field" in match:  # constructor(private store: Store): a field of the class
            parts = type_parts(src.text(match["type"][0]))
            if parts is not None:
                name = src.text(match["name"][0])
                facts.append(TypeFact(match["field"][0], name, parts, owner="this"))
            continue
        node = match["fact"][0]
        if "returns" in match:
            written = src.text(match["type"][0])
            function = src.text(match["returns"][0])
            parts = type_parts(written)
            if parts is not None:
                facts.append(TypeFact(node, function, parts, returns=True))
            elif (elements := element_parts(written)) is not None:
                facts.append(TypeFact(node, function, elements, returns=True, element=True))
            continue
        owner = src.text(match["owner"][0]) if "owner" in match else None
        name = src.text(match["name"][0])
        if "cast" in match:  # x = cast(T, value): the type checker's word, a declaration
            if "".join(src.text(match["cast"][0]).split()) in _CASTS:
                parts = type_parts(src.text(match["type"][0]))
                if parts is not None:
                    facts.append(TypeFact(node, name, parts))
            continue
        if "alias" in match:
            text = "".join(src.text(match["alias"][0]).split())
            if DOTTED.match(text) and text not in ("None", "True", "False"):
                facts.append(TypeFact(node, name, tuple(text.split(".")), owner, alias=True))
            continue
        if "call" in match:
            text = "".join(src.text(match["call"][0]).split())
            parts = tuple(text.split("."))
            # A class, a factory function, or a method whose return annotation may tell.
            if DOTTED.match(text):
                facts.append(TypeFact(node, name, parts, owner, from_call=True))
            continue
        parts = type_parts(src.text(match["type"][0]))
        if parts is not None:
            facts.append(TypeFact(node, name, parts, owner))
    return facts
