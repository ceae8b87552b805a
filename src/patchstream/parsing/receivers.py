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

from dataclasses import replace

import tree_sitter as ts

from patchstream.parsing.declared_types import cpp_declared_type, declared_type
from patchstream.parsing.element_facts import iteration, passed_callback
from patchstream.parsing.fact_queries import facts_query
from patchstream.parsing.jsdoc import jsdoc_tags
from patchstream.parsing.kotlin_types import (
    FACTORIES,
    SUPERTYPES,
    factory_element,
    initializers_of,
    shadowed_parameters,
)
from patchstream.parsing.node_text import class_like, without_generics
from patchstream.parsing.php_language import doc_tags
from patchstream.parsing.rust_language import (
    called_text,
    generic_bound,
    passed_name,
    pattern_fact,
    variant_payloads,
)
from patchstream.parsing.source import Source
from patchstream.parsing.swift_library import CONFORMANCES
from patchstream.parsing.type_fact import TypeFact
from patchstream.parsing.type_text import (
    DOTTED,
    container_parts,
    element_parts,
    tuple_items,
    type_parts,
)

_CASTS = frozenset({"cast", "t.cast", "typing.cast"})
_LITERALS = frozenset({"composite_literal", "struct_expression"})  # Go's ``T{}``, Rust's


def type_facts(tree: ts.Tree, language: str, src: Source) -> list[TypeFact]:
    query = facts_query(language)
    if query is None:
        return []
    facts: list[TypeFact] = []
    payloads: dict[str, str] | None = None  # Rust's enum variants, read at the first match
    for _, match in ts.QueryCursor(query).matches(tree.root_node):
        if "tuple_fields" in match:  # Rust's ``struct Wrapper(Option<Cache>)``: ``self.0``
            fields = [f for f in match["tuple_fields"][0].named_children
                      if f.type not in ("visibility_modifier", "attribute_item")]  # fmt: skip
            for index, field in enumerate(fields):
                parts = type_parts(_written_type(field, language, src))
                if parts is not None:
                    facts.append(TypeFact(field, str(index), parts))
                if parts is not None and _holds_one(field, src):
                    facts.append(TypeFact(field, str(index), parts, container="iter"))
            continue
        if "variant" in match:  # Rust's ``Class::Bytes(ref x) =>``, ``if let Some(x) = f()``
            payloads = variant_payloads(tree.root_node, src) if payloads is None else payloads
            facts += _pattern_facts(match, src, payloads)
            continue
        if "narrowed" in match:  # if isinstance(x, T): / if (x instanceof T): in that block
            check = match.get("isinstance")
            parts = type_parts(src.text(match["type"][0]))
            if parts is not None and (check is None or src.text(check[0]) == "isinstance"):
                name = src.text(match["name"][0])
                facts.append(TypeFact(match["narrowed"][0], name, parts, block=True))
            continue
        if "passed" in match:
            facts += passed_callback(match, src)
            continue
        if "implicit_error" in match:  # Swift's ``catch { error.m() }``: an Error there
            facts.append(TypeFact(match["implicit_error"][0], "error", ("Error",), block=True))
            continue
        if "doc" in match:  # PHP's docblock types, JavaScript's JSDoc
            facts += _documented(match["doc"][0], match["documented"][0], src, language)
            continue
        if "iter" in match:  # for x in items, items.map(x => ...): an element of items
            facts += iteration(match, src, language)
            continue
        if "unpack" in match:  # name, cmd, args = f(): each takes its item of f's tuple
            text = "".join(src.text(match["call"][0]).split())
            targets = match["unpack"][0].named_children
            if DOTTED.match(text):
                call = tuple(text.split("."))
                facts += [
                    TypeFact(match["fact"][0], src.text(target), call, from_call=True,
                             element=True, position=index)
                    for index, target in enumerate(targets) if target.type == "identifier"
                ]  # fmt: skip
            continue
        if "loop" in match:  # for x in f(): x is an element of what f returns
            text = "".join(src.text(match["call"][0]).split())
            if DOTTED.match(text):
                name, call = src.text(match["name"][0]), tuple(text.split("."))
                facts.append(TypeFact(match["loop"][0], name, call, from_call=True, element=True))
            continue
        if "built" in match:  # const items = [new Foo()]: its elements are Foos
            text = "".join(src.text(match["built"][0]).split())
            if DOTTED.match(text):
                element = tuple(text.split("."))
                name = src.text(match["name"][0])
                facts += [TypeFact(match["fact"][0], name, element, from_call=True, container=kind)
                          for kind in ("iter", "item")]  # fmt: skip
            continue
        if "destructured" in match:  # const { a, b } = this: each has its field's type
            node = match["destructured"][0]
            for target in match["name"]:
                name = src.text(target)
                facts.append(TypeFact(node, name, ("this", name), through="attribute"))
            continue
        if "field" in match:  # constructor(private store: Store): a field of the class
            parts = type_parts(src.text(match["type"][0]))
            if parts is not None:
                name = src.text(match["name"][0])
                facts.append(TypeFact(match["field"][0], name, parts, owner="this"))
            continue
        node = match["fact"][0]
        if "self" in match:  # Kotlin's ``fun add(..) = apply { .. }``: its own class
            facts.append(TypeFact(node, src.text(match["returns"][0]), ("Self",), returns=True))
            continue
        if "returns" in match:
            written = _written_type(match["type"][0], language, src)
            function = src.text(match["returns"][0])
            parts = type_parts(written)
            if parts is not None:
                facts.append(TypeFact(node, function, parts, returns=True))
            elif (elements := element_parts(written)) is not None:
                facts.append(TypeFact(node, function, elements, returns=True, element=True))
            for index, item in enumerate(tuple_items(written)):
                if item is not None:
                    facts.append(TypeFact(node, function, item, returns=True, element=True,
                                          position=index))  # fmt: skip
            continue
        owner = src.text(match["owner"][0]) if "owner" in match else None
        name = src.text(match["name"][0])
        if owner is None and name.startswith("self."):  # Ruby's ``@x`` (``RubySource``)
            owner, name = "self", name[5:]
        if "cast" in match:  # x = cast(T, value): the type checker's word, a declaration
            if "".join(src.text(match["cast"][0]).split()) in _CASTS:
                parts = type_parts(src.text(match["type"][0]))
                if parts is not None:
                    facts.append(TypeFact(node, name, parts))
            continue
        if "alias" in match:
            text = "".join(src.text(match["alias"][0]).split())
            if DOTTED.match(text) and text not in ("None", "True", "False"):
                parts = tuple(text.split("."))
                facts.append(TypeFact(node, name, parts, owner, alias=True))
                if owner is None and len(parts) == 2 and parts[0] in ("self", "this"):
                    # c = self.clock: c also has the attribute's type.
                    facts.append(TypeFact(node, name, parts, through="attribute"))
            continue
        if "item" in match:  # x = items[k]
            text = "".join(src.text(match["item"][0]).split())
            if DOTTED.match(text):
                facts.append(TypeFact(node, name, tuple(text.split(".")), through="item"))
            continue
        if "call" in match:
            text = without_generics("".join(src.text(match["call"][0]).split()))
            if "object" in match:  # Java's ``var x = a.b()``: the call's name is ``b``
                text = "".join(src.text(match["object"][0]).split()) + "." + text
            if language == "rust" and (passed := passed_name(text)) is not None:
                passed_parts = tuple(
                    passed.split(".")
                )  # ``let c = cls.clone()``: ``c`` is a ``cls``
                self_field = len(passed_parts) == 2 and passed_parts[0] == "self"
                facts.append(TypeFact(node, name, passed_parts, owner, alias=not self_field,
                                      through="attribute" if self_field else None))  # fmt: skip
                continue
            if language == "rust":  # ``let f = self.pop().unwrap()``: what ``pop`` returns
                text = called_text(text)
            text = text.replace("::", ".")  # Rust's ``Item::new()``
            parts = tuple(text.split("."))
            # A class, a factory function, or a method whose return annotation may tell.
            # Go's ``T{}`` / ``&T{}`` and Rust's ``T { .. }`` name the type itself: a
            # declaration, not a call.
            literal = match["call"][0].parent
            # Ruby's facts are all ``Foo.new``, PHP's ``new Foo``: what they build, too.
            built = literal is not None and (
                literal.type in _LITERALS
                or language == "ruby"
                or (language == "php" and literal.type == "object_creation_expression")
                or (language == "swift" and "object" not in match and class_like(parts[-1]))
            )  # Swift's ``Logger(prefix: p)``: an initializer, so a Logger
            if language == "kotlin" and text in FACTORIES:  # ``mutableListOf<T>()``
                facts.append(TypeFact(node, name, (FACTORIES[text],), owner))
                held = factory_element(src.text(literal) if literal is not None else "")
                facts += [TypeFact(node, name, held, owner, container=kind)
                          for kind in ("iter", "item") if held is not None]  # fmt: skip
            elif DOTTED.match(text):
                facts.append(TypeFact(node, name, parts, owner, from_call=not built))
            continue
        written = _written_type(match["type"][0], language, src)
        if written == "var":  # Java's inferred local: the value's type (a ``@call`` fact)
            continue
        if "array" in match:  # C++'s ``LRUCache shard_[kNumShards];``: its elements are
            held = type_parts(written)
            facts += [TypeFact(node, name, held, owner, container=kind)
                      for kind in ("iter", "item") if held is not None]  # fmt: skip
            continue
        containers = container_parts(written)  # before type_parts: Array<T> is not an Array
        for kind, element in containers.items():
            facts.append(TypeFact(node, name, element, owner, container=kind))
        parts = None if containers else type_parts(written)
        if parts and language == "rust" and _holds_one(match["type"][0], src):
            # ``mat.map_or(false, |m| ..)``: an option's adapters hand on what it holds
            facts.append(TypeFact(node, name, parts, owner, container="iter"))
        if containers and language == "kotlin":  # ``List<T>`` is a List too (its extensions)
            outer = without_generics("".join(src.text(match["type"][0]).split())).rstrip("?")
            parts = (outer,) if outer in SUPERTYPES else None
        elif containers and language == "swift":  # ``[T]`` is an Array (its protocols'
            # extensions: ``commandStack.getPrimaryHelpName()``)
            outer = without_generics("".join(src.text(match["type"][0]).split())).rstrip("?!")
            kind = match["type"][0].type
            outer = {"array_type": "Array", "dictionary_type": "Dictionary"}.get(kind, outer)
            parts = (outer,) if outer in CONFORMANCES else None
        elif containers and language == "csharp":  # ``ThreadSafe.IList<T> Modules``: an
            # IList too, whose extension methods (``Modules.GetSafeEnumerable()``) it takes
            outer = without_generics("".join(src.text(match["type"][0]).split())).rstrip("?")
            parts = type_parts(outer) if DOTTED.match(outer) else None
        if parts is not None:
            facts.append(TypeFact(node, name, parts, owner))
    if language == "kotlin":
        shadowed = shadowed_parameters([(fact.node, fact.name) for fact in facts])
        # A renamed parameter is seen by its class's initializers only: a fact bound there.
        facts = [
            narrowed
            for at, fact in enumerate(facts)
            for narrowed in (
                [fact] if at not in shadowed
                else [replace(fact, node=initializer, block=True)
                      for initializer in initializers_of(fact.node)] if fact.container is None
                else []
            )
        ]  # fmt: skip
    return facts


def _documented(doc: ts.Node, documented: ts.Node, src: Source, language: str) -> list[TypeFact]:
    """``@param T $x`` (in the function's body), ``@return T`` (the function's), ``@var T``
    on a property (the class's attribute) or ``@var T $x`` before a statement; JSDoc's
    ``@param``, ``@returns`` and ``@type`` (of ``this.x = ..`` or ``const x = ..``) alike."""
    facts = []
    body = documented.child_by_field_name("body")
    tags = jsdoc_tags(src.text(doc)) if language == "javascript" else doc_tags(src.text(doc))
    for tag, variable, written in tags:
        parts = type_parts(written)
        if parts is None:
            continue
        if tag == "param" and variable and body is not None:
            facts.append(TypeFact(body, variable, parts))
        elif tag == "var" and language == "javascript":
            facts += _jsdoc_typed(documented, parts, src)
        elif tag == "return" and documented.type in _DOCUMENTED_FUNCTIONS:
            facts.append(TypeFact(documented, src.text(documented.child_by_field_name("name")),
                                  parts, returns=True))  # fmt: skip
        elif tag == "var" and documented.type == "property_declaration":
            for element in documented.named_children:
                if element.type == "property_element" and element.named_child_count:
                    facts.append(TypeFact(documented, src.text(element.named_children[0]), parts))
        elif tag == "var" and variable:
            facts.append(TypeFact(documented, variable, parts))
    return facts


_DOCUMENTED_FUNCTIONS = frozenset({"method_declaration", "function_definition",  # PHP
                                   "method_definition", "function_declaration"})  # fmt: skip


def _jsdoc_typed(documented: ts.Node, parts: tuple[str, ...], src: Source) -> list[TypeFact]:
    """``/** @type {T} */`` before ``this.x = ..`` (the class's attribute) or ``const x =
    ..`` (the variable)."""
    first = documented.named_children[0] if documented.named_child_count else None
    if documented.type == "expression_statement" and first is not None:
        assigned = first.type == "assignment_expression"
        target = first.child_by_field_name("left") if assigned else None
        owner = target.child_by_field_name("object") if target is not None else None
        field = target.child_by_field_name("property") if target is not None else None
        if owner is not None and owner.type == "this" and field is not None:
            return [TypeFact(documented, src.text(field), parts, "this")]
    elif first is not None and first.type == "variable_declarator":
        name = first.child_by_field_name("name")
        if name is not None and name.type == "identifier":
            return [TypeFact(documented, src.text(name), parts)]
    return []


def _pattern_facts(
    match: dict[str, list[ts.Node]], src: Source, payloads: dict[str, str]
) -> list[TypeFact]:
    """A Rust pattern's one binding, typed in its arm (or its ``if let``) only."""
    holder = match["arm"][0]
    value = match["value"][0] if "value" in match else None
    if holder.type == "match_arm" and holder.parent is not None and holder.parent.parent:
        value = holder.parent.parent.child_by_field_name("value")  # what the match is on
    elif holder.parent is not None:
        holder = holder.parent  # the ``if`` / ``while`` whose condition binds it
    found = pattern_fact(holder, match["variant"][0], value, src, payloads)
    if found is None:
        return []
    node, name, parts, called = found
    return [TypeFact(node, name, parts, from_call=called, block=True)]


def _holds_one(declared: ts.Node, src: Source) -> bool:
    """A Rust ``Option<T>`` or ``Result<T, E>`` (read through as a ``T``): its adapters'
    closures (``m.map(|x| ..)``) take the ``T`` as an element."""
    return "".join(src.text(declared).split()).lstrip("&").startswith(("Option<", "Result<"))


def _written_type(node: ts.Node, language: str, src: Source) -> str:
    """A declared type's text; Java's and Rust's rewritten in the notation read here."""
    if language == "cpp":  # ``leveldb::Options`` -> ``leveldb.Options``
        return cpp_declared_type(node, src)
    if language == "swift":  # ``Foo?``, ``Foo!``, and a metatype ``Foo.Type``: a Foo's
        written = declared_type(node, src).rstrip("?!")
        return written.removesuffix(".Type").removesuffix(".Protocol")
    if language == "rust":  # ``dfa: &A`` with ``A: Automaton``: an Automaton
        written = declared_type(node, src)
        return generic_bound(node, written, src) or written
    if language in ("java", "csharp", "kotlin", "scala"):
        return declared_type(node, src)
    return src.text(node)
