"""Receiver types in Java and Rust: declared types of parameters, fields and locals, ``var``
and ``let`` bound to what builds the value, return types (Rust's ``Self``), calls on what a
call returns, and Java's implicit ``this`` and same-package classes."""

from __future__ import annotations

import pytest
import tree_sitter as ts

from patchstream.parsing.declared_types import declared_type
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.languages import get_language
from patchstream.parsing.source import Source
from patchstream.parsing.type_text import container_parts, type_parts
from patchstream.schemas.graph import EdgeType
from patchstream.schemas.state import FileState
from tests.conftest import build_state


def _rust_parameter_type(written: str) -> str:
    code = f"fn f(x: {written}) {{}}".encode()
    tree = ts.Parser(get_language("rust")).parse(code)
    parameter = tree.root_node.named_children[0].child_by_field_name("parameters")
    assert parameter is not None
    node = parameter.named_children[0].child_by_field_name("type")
    assert node is not None
    return declared_type(node, Source(code))


def _java_field_type(written: str) -> str:
    code = f"class A {{ {written} x; }}".encode()
    tree = ts.Parser(get_language("java")).parse(code)
    body = tree.root_node.named_children[0].child_by_field_name("body")
    assert body is not None
    node = body.named_children[0].child_by_field_name("type")
    assert node is not None
    return declared_type(node, Source(code))


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("Item", "Item"),
        ("&Item", "Item"),
        ("&mut Item", "Item"),
        ("&'a Item", "Item"),
        ("Box<dyn Store>", "Store"),
        ("impl Store", "Store"),
        ("Option<Rc<RefCell<Item>>>", "Item"),
        ("crate::store::Memory", "crate.store.Memory"),
        ("&[Item]", "list[Item]"),
        ("Vec<Item>", "list[Item]"),
        ("HashMap<String, Item>", "dict[String, Item]"),
        ("Wrapper<Item>", "Wrapper"),
    ],
)
def test_rust_types_read_as_the_type_a_call_reaches(written: str, expected: str) -> None:
    assert _rust_parameter_type(written) == expected


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("Item", "Item"),
        ("com.shop.Item", "com.shop.Item"),
        ("Optional<Item>", "Item"),
        ("List<Item>", "list[Item]"),
        ("java.util.List<Item>", "list[Item]"),
        ("Item[]", "list[Item]"),
        ("Map<String, Item>", "dict[String, Item]"),
        ("Comparator<Item>", "Comparator"),
    ],
)
def test_java_types_read_as_the_type_a_call_reaches(written: str, expected: str) -> None:
    assert _java_field_type(written) == expected


def test_rewritten_containers_give_their_elements() -> None:
    assert container_parts(_rust_parameter_type("&[Item]")) == {"iter": ("Item",),
                                                                "item": ("Item",)}  # fmt: skip
    assert container_parts(_java_field_type("Map<String, Item>"))["item"] == ("Item",)
    assert type_parts(_rust_parameter_type("&mut crate::Item")) == ("crate", "Item")


JAVA = b"""
package com.shop.orders;

import com.shop.store.Store;

interface Priced {
    double price();
}

class Item implements Priced {
    public double price() { return 1.0; }
    public Item copy() { return new Item(); }
    public static Item make() { return new Item(); }
}

class Ledger {
    void record(Item item) {}
}

public class Orders {
    private final Ledger ledger = new Ledger();
    private Store store;

    Ledger currentLedger() { return ledger; }

    double total(java.util.List<Priced> priced, Item first) {
        double sum = first.price();
        for (Priced p : priced) { sum += p.price(); }
        var built = new Item();
        built.copy();
        var made = Item.make();
        made.copy();
        ledger.record(first);
        currentLedger().record(first);
        new Ledger().record(first);
        store.put("k", first);
        Tax.apply(sum);
        String.valueOf(sum);
        return sum;
    }
}
"""

RUST = b"""
use crate::store::Store;

pub trait Priced {
    fn price(&self) -> f64;
}

pub struct Item {
    cost: f64,
}

impl Item {
    pub fn new(cost: f64) -> Self {
        Item { cost }
    }
    pub fn copy(&self) -> Item {
        Item { cost: self.cost }
    }
}

impl Priced for Item {
    fn price(&self) -> f64 {
        self.cost
    }
}

pub struct Orders {
    store: Box<dyn Store>,
    first: Option<Item>,
}

impl Orders {
    fn total(&mut self, items: &[Item], first: &mut Item, p: &dyn Priced) -> f64 {
        let mut sum = first.price();
        sum += p.price();
        let built = Item::new(1.0);
        built.copy();
        let literal = Item { cost: 2.0 };
        literal.price();
        Item::new(3.0).copy();
        self.store.put("k");
        for each in items {
            each.price();
        }
        sum
    }
}
"""


def _calls(state: FileState, caller: str) -> set[str]:
    prefix = f"r::{state.path}::"
    return {
        e.dst.removeprefix(prefix) if e.ref is None else f"ref:{e.ref.name}@{e.ref.module}"
        for e in state.edges
        if e.type is EdgeType.CALLS and e.src == f"{prefix}{caller}"
    }


def test_java_receivers_resolve_to_the_declared_or_built_type(builder: FileStateBuilder) -> None:
    state = build_state(builder, "com/shop/orders/Orders.java", JAVA)
    assert _calls(state, "Orders.total") == {
        "Item.price",  # a parameter
        "Priced.price",  # an enhanced for's variable
        "Item.copy",  # var built = new Item(); var made = Item.make() (returns Item)
        "Item.make",
        "Ledger.record",  # a field without this., a method's return, new Ledger()
        "Orders.currentLedger",
        "ref:Store.put@com.shop.store",  # an imported type's field
        "ref:Tax.apply@com.shop.orders",  # a class of the same package: no import needed
        "ref:String.valueOf@None",  # java.lang's
    }


CONSTRUCTORS = b"""
package com.shop;

class Box extends Base {
    static final Box EMPTY = new Box();
    private int size;

    Box() { this(0); }
    Box(int size) { super(size); }

    static Box of() { return new Box(); }

    int size() { return size; }

    int twice(Box other) { return other.size() + size(); }
}
"""


def _made(state: FileState, caller: str) -> set[tuple[EdgeType, str]]:
    prefix = f"r::{state.path}::"
    return {
        (e.type, e.dst.removeprefix(prefix) if e.ref is None else f"ref:{e.ref.name}")
        for e in state.edges
        if e.src == f"{prefix}{caller}" and e.type in (EdgeType.CALLS, EdgeType.INSTANTIATES)
    }


def test_java_constructors_count_as_their_class(builder: FileStateBuilder) -> None:
    """Inside the class, ``new Box()`` finds the constructor before the class; ``this(...)``
    and ``super(...)`` run the class's and the base's; a singleton builds its own class."""
    state = build_state(builder, "com/shop/Box.java", CONSTRUCTORS)
    assert _made(state, "Box.of") == {(EdgeType.INSTANTIATES, "Box")}
    assert _made(state, "Box.Box") == {(EdgeType.INSTANTIATES, "Box")}
    assert _made(state, "Box.Box#2") == {(EdgeType.INSTANTIATES, "ref:Base")}
    assert _made(state, "Box") == {(EdgeType.INSTANTIATES, "Box")}
    # An enum constant with arguments runs the enum's constructor.
    source = b"package com.shop;\nenum Method { GET(false), NONE; Method(boolean b) {} }"
    enum = build_state(builder, "com/shop/Method.java", source)
    assert _made(enum, "Method") == {(EdgeType.INSTANTIATES, "Method")}


def test_java_a_method_named_as_a_field_is_what_a_call_reaches(builder: FileStateBuilder) -> None:
    state = build_state(builder, "com/shop/Box.java", CONSTRUCTORS)
    # ``other.size()`` and ``size()``: the method (Box.size#2), not the field (Box.size).
    assert _made(state, "Box.twice") == {(EdgeType.CALLS, "Box.size#2")}


INHERITED = b"""
package com.shop.nodes;

import com.shop.parser.Token;

class Comment extends LeafNode {
    String text(Token token) {
        String name = token.asStartTag().normalName();
        return outerHtml() + name;
    }
}
"""


def test_java_calls_without_a_receiver_and_chains_through_other_files(
    builder: FileStateBuilder,
) -> None:
    """``outerHtml()`` is ``this.outerHtml()``: a method the base (of this package, no import)
    may define; ``token.asStartTag().normalName()`` joins through asStartTag's RETURNS edge."""
    state = build_state(builder, "com/shop/nodes/Comment.java", INHERITED)
    assert _calls(state, "Comment.text") == {
        "ref:LeafNode.outerHtml@com.shop.nodes",
        "ref:Token.asStartTag@com.shop.parser",
        "ref:Token.asStartTag().normalName@com.shop.parser",
    }


def test_rust_receivers_resolve_through_references_boxes_and_self(
    builder: FileStateBuilder,
) -> None:
    state = build_state(builder, "src/orders.rs", RUST)
    assert _calls(state, "Orders.total") == {
        "Item.price",  # &mut Item; a struct literal; an element of &[Item]
        "Priced.price",  # &dyn Priced
        "Item.new",
        "Item.copy",  # Item::new() -> Self, bound and called directly
        "ref:Store.put@crate::store",  # Box<dyn Store>
    }
    prefix = f"r::{state.path}::"
    returns = {(e.src.removeprefix(prefix), e.dst.removeprefix(prefix))
               for e in state.edges if e.type is EdgeType.RETURNS}  # fmt: skip
    assert returns == {("Item.new", "Item"), ("Item.copy", "Item")}  # -> Self is the impl's type


def test_python_chains_through_another_files_method_too(builder: FileStateBuilder) -> None:
    source = b"from .sessions import Session\n\ndef fetch(s: Session, r):\n"
    source += b"    return s.get_adapter(r).send(r)\n"
    state = build_state(builder, "pkg/api.py", source)
    assert "ref:Session.get_adapter().send@pkg.sessions" in _calls(state, "fetch")


def test_python_isinstance_narrows_a_name_inside_its_block(builder: FileStateBuilder) -> None:
    source = b"""from .core import Group


def resolve(command, ctx):
    if isinstance(command, Group):
        command.resolve_command(ctx)
    command.invoke(ctx)
"""
    state = build_state(builder, "pkg/shell.py", source)
    calls = _calls(state, "resolve")
    assert "ref:Group.resolve_command@pkg.core" in calls
    assert "ref:command.invoke@None" in calls  # outside the block: nothing known


def test_fields_of_another_files_class_are_joined_through_their_returns_edge(
    builder: FileStateBuilder,
) -> None:
    """``t.tagPending.append()`` (t's class in another file), ``Filters.DIRECTORY.and()``
    (a static field), ``r.request.copy()``: each wants ``T.field().m``; the field's own
    file gives it a RETURNS edge to its declared type."""
    java = b"""package com.shop.parser;

class TokeniserState {
    void read(Tokeniser t) {
        t.tagPending.append("x");
        Filters.DIRECTORY.and(null);
        Token.Tag.valueOf("x");
    }
}
"""
    calls = _calls(
        build_state(builder, "com/shop/parser/TokeniserState.java", java), "TokeniserState.read"
    )
    assert calls == {
        "ref:Tokeniser.tagPending().append@com.shop.parser",
        "ref:Filters.DIRECTORY().and@com.shop.parser",
        "ref:Token.Tag.valueOf@com.shop.parser",  # a nested class, not a field
    }
    owner = b"""package com.shop.parser;

class Tokeniser {
    Token.Tag tagPending;
    private String name;
}
"""
    state = build_state(builder, "com/shop/parser/Tokeniser.java", owner)
    returns = {(e.src.rsplit("::", 1)[-1], e.ref.name if e.ref else e.dst)
               for e in state.edges if e.type is EdgeType.RETURNS}  # fmt: skip
    assert returns == {("Tokeniser.tagPending", "Token.Tag")}  # String is no class of ours
    python = (
        b"from .models import Response\n\n\ndef again(r: Response):\n    return r.request.copy()\n"
    )
    assert "ref:Response.request().copy@pkg.models" in _calls(
        build_state(builder, "pkg/auth.py", python), "again"
    )


OVERLOADS = b"""package com.shop.parser;

import static com.shop.util.Strings.inSorted;

abstract class Token {
    private Token() {}

    Token reset() { return this; }

    static void reset(StringBuilder sb) {}

    static final class Doctype extends Token {
        final StringBuilder name = new StringBuilder();

        @Override
        Token reset() {
            super.reset();
            reset(name);
            return this;
        }
    }
}

class HtmlTreeBuilder extends TreeBuilder {
    boolean check(String name) {
        tokeniser.transition(name);
        return inSorted(name, null);
    }
}
"""


def test_java_overloads_by_argument_count_bases_past_constructors_and_base_fields(
    builder: FileStateBuilder,
) -> None:
    state = build_state(builder, "com/shop/parser/Token.java", OVERLOADS)
    # super.reset(): the base's (Token's own constructor does not hide the class Token);
    # reset(name): the static one-argument overload of the outer class, not Doctype.reset().
    assert _calls(state, "Token.Doctype.reset") == {"Token.reset", "Token.reset#2"}
    # A field the base (another file) declares; a static import over an inherited guess.
    assert _calls(state, "HtmlTreeBuilder.check") == {
        "ref:TreeBuilder.tokeniser().transition@com.shop.parser",
        "ref:inSorted@com.shop.util.Strings",
    }


STATES = b"""package org.jsoup.parser;

enum HtmlTreeBuilderState {
    Initial {
        boolean process(Token t, HtmlTreeBuilder tb) {
            return anythingElse(t, tb);
        }

        private boolean anythingElse(Token t, HtmlTreeBuilder tb) {
            return tb.process(t);
        }
    },
    InHead {
        boolean process(Token t, HtmlTreeBuilder tb) {
            ((Element) t.node).tag();
            org.jsoup.nodes.Document doc = tb.document();
            return doc.location() != null;
        }

        private boolean anythingElse(Token t, TreeBuilder tb) {
            return tb.processEndTag("head");
        }
    };

    abstract boolean process(Token t, HtmlTreeBuilder tb);
}
"""


def test_java_same_named_methods_keep_their_own_parameters_casts_and_qualified_types(
    builder: FileStateBuilder,
) -> None:
    """Two ``anythingElse`` of enum constants' bodies declare ``tb`` differently: each keeps
    its own. ``((Element) x).m()`` is Element's ``m``; ``org.jsoup.nodes.Document`` is the
    class ``Document`` of that package."""
    state = build_state(builder, "org/jsoup/parser/HtmlTreeBuilderState.java", STATES)
    assert "ref:HtmlTreeBuilder.process@org.jsoup.parser" in _calls(
        state, "HtmlTreeBuilderState.anythingElse"
    )
    assert "ref:TreeBuilder.processEndTag@org.jsoup.parser" in _calls(
        state, "HtmlTreeBuilderState.anythingElse#2"
    )
    calls = _calls(state, "HtmlTreeBuilderState.process#2")
    assert "ref:Element.tag@org.jsoup.parser" in calls
    assert "ref:Document.location@org.jsoup.nodes" in calls
