"""One fact about a name's type, as read from a file's syntax (``receivers.type_facts`` and
``element_facts`` produce them; ``receiver_types`` binds them per scope)."""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts


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
    # "iter" / "item": the type of the name's elements (``for x in name``) / of ``name[k]``
    # (``items: list[Foo]``, ``by_key: dict[str, Foo]``, ``Foo[]``).
    container: str | None = None
    # "iter" / "item": the name takes an element of the container ``type_parts`` names
    # (``for x in self.items``, ``x = self.by_key[k]``, ``items.map(x => ...)``);
    # "attribute": the type of the attribute ``type_parts`` names (``c = self.clock``).
    through: str | None = None
    # A tuple's item: ``-> tuple[str, Command]`` (a ``returns`` fact per position) and
    # ``name, cmd = f()`` (``element`` facts: the name takes that item of f's result).
    position: int | None = None
    block: bool = False  # the name has the type inside ``node`` only (narrowed by a check)
