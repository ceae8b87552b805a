"""Types as written in a declaration's text, in every language's notation: the one class a
type names (``Optional[Foo]``, ``Foo | null``, ``Subscriber<T>``: their class's dotted
parts), what iterating or indexing a container gives, a tuple's items. Pure text, no tree."""

from __future__ import annotations

import re

from patchstream.parsing.node_text import without_generics

_WRAPPERS = re.compile(r"^(?:typing\.)?(?:Optional|Annotated|Final|ClassVar|Type|type)\[(.*)\]$")
_CONTAINER = re.compile(
    r"^(?:typing\.|t\.|abc\.|cabc\.|collections\.abc\.)?(?:List|list|Sequence|"
    r"MutableSequence|Iterable|Iterator|Generator|Set|set|FrozenSet|frozenset|Collection|"
    r"Tuple|tuple|Deque|deque)\[(.*)\]$"
)
_MAPPING = re.compile(
    r"^(?:typing\.|t\.|abc\.|cabc\.|collections\.abc\.)?(?:Dict|dict|Mapping|MutableMapping|"
    r"OrderedDict|DefaultDict|defaultdict)\[(.*)\]$"
)
_TUPLE = re.compile(r"^(?:typing\.|t\.)?(?:Tuple|tuple)\[(.*)\]$")
_TS_ARRAY = re.compile(r"^(?:(?:Readonly)?Array<(.*)>|(.*)\[\])$")
# Names joined by dots; a part after the first may be digits (a Rust tuple field: ``self.0``).
DOTTED = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.(?:[A-Za-z_$][A-Za-z0-9_$]*|[0-9]+))*$")


def type_parts(text: str) -> tuple[str, ...] | None:
    """``Session``, ``"models.Request"``, ``Optional[Foo]``, ``Foo | None`` -> the dotted
    name's parts; containers and unions of several types -> None."""
    cleaned = "".join(text.split()).strip("\"'").lstrip("*&")  # Go pointers
    while match := _WRAPPERS.match(cleaned):
        cleaned = match.group(1).split(",", 1)[0].strip("\"'")
    # ``T | None`` (Python), ``T | null | undefined`` (TypeScript): the one real type.
    nothing = ("None", "", "null", "undefined")
    options = [without_generics(o) for o in _top_level(cleaned, "|") if o not in nothing]
    if len(options) != 1 or not DOTTED.match(options[0]):
        return None  # TypeScript's ``Subscriber<T>`` is a Subscriber
    return tuple(options[0].split("."))


def container_parts(text: str) -> dict[str, tuple[str, ...]]:
    """What iterating (``iter``) and indexing (``item``) an annotated container gives:
    ``list[Foo]`` both Foo, ``dict[str, Foo]`` str and Foo, TypeScript ``Foo[]`` both Foo."""
    cleaned = "".join(text.split()).strip("\"'")
    while match := _WRAPPERS.match(cleaned):
        cleaned = _top_level(match.group(1))[0].strip("\"'")
    cleaned = cleaned.removesuffix("|None").removeprefix("None|")
    out: dict[str, tuple[str, ...]] = {}
    if (mapping := _MAPPING.match(cleaned)) is not None:
        arguments = _top_level(mapping.group(1))
        if len(arguments) == 2:
            for kind, argument in zip(("iter", "item"), arguments, strict=True):
                if (parts := type_parts(argument)) is not None:
                    out[kind] = parts
        return out
    if (array := _TS_ARRAY.match(cleaned)) is not None:
        element = type_parts(array.group(1) or array.group(2))
    else:
        element = element_parts(cleaned)
    return {"iter": element, "item": element} if element is not None else {}


def tuple_items(text: str) -> list[tuple[str, ...] | None]:
    """``tuple[str | None, Command | None]`` -> the type of each item (None: not one
    class); ``tuple[T, ...]`` and anything else -> []."""
    match = _TUPLE.match("".join(text.split()).strip("\"'"))
    items = _top_level(match.group(1)) if match else []
    if len(items) < 2 or "..." in items:
        return []
    return [type_parts(item) for item in items]


def _top_level(arguments: str, separator: str = ",") -> list[str]:
    """``str, list[int]`` -> [``str``, ``list[int]``]: parts between separators outside
    brackets (``Observable<T | U> | null`` splits on its second ``|`` only)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(arguments):
        if char in "[<(":
            depth += 1
        elif char in "]>)":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(arguments[start:index])
            start = index + 1
    parts.append(arguments[start:])
    return parts


def element_parts(text: str) -> tuple[str, ...] | None:
    """``list[Foo]``, ``Iterator["Foo"]``, ``tuple[Foo, ...]`` -> the elements' type."""
    match = _CONTAINER.match("".join(text.split()).strip("\"'"))
    if match is None:
        return None
    return type_parts(match.group(1).split(",", 1)[0])
