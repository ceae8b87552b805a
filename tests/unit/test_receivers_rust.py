"""Rust calls as rustc resolves them (``bench/_rust_reference.py`` measures them against its
MIR): calls inside the standard expression macros, an inline ``mod``'s own functions, paths
from the crate's root, ``?`` and ``unwrap`` chains, enum variant and ``Some`` patterns,
elements of ``items.iter()``, generic parameters by their trait bound, and types a ``pub use``
re-exports."""

from __future__ import annotations

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.rust_language import called_text, with_open_macros
from patchstream.schemas.graph import EdgeType
from patchstream.schemas.state import FileState
from tests.conftest import build_state

LIB = b"""use crate::{
    ast::{self, Ast},
    util::Cache,
};

pub struct Frame(u8);
pub struct Lit { n: usize }
pub enum Kind { Bytes(Frame), Text(Lit) }
pub trait Visitor { fn start(&mut self); }

impl Frame {
    pub fn len(&self) -> usize { 0 }
    pub fn unwrap_class(self) -> Lit { Lit { n: 0 } }
}

impl Lit {
    pub fn is_exact(&self) -> bool { true }
    pub fn pop(&mut self) -> Option<Frame> { None }
    pub fn get(&self) -> Result<Frame, ()> { Err(()) }

    pub fn chains(&mut self) -> Result<(), ()> {
        assert_eq!(self.pop().unwrap().len(), 0, "{}", self.get()?.len());
        let frame = self.pop().unwrap();
        frame.unwrap_class().is_exact();
        Ok(())
    }

    pub fn patterns(&mut self, kind: &Kind) {
        match *kind {
            Kind::Bytes(ref frame) => { frame.len(); }
            Kind::Text(ref lit) => { lit.is_exact(); }
        }
        if let Some(frame) = self.pop() {
            frame.unwrap_class();
        }
    }

    pub fn elements(&self, lits: &[Lit], more: Vec<Frame>) -> bool {
        for frame in more.iter() {
            frame.len();
        }
        let copy = self.clone();
        copy.is_exact();
        lits.iter().all(|lit| lit.is_exact())
    }
}

pub fn visit<V: Visitor>(mut visitor: V, ast: Ast) -> Cache {
    visitor.start();
    let concat = ast::Concat { span: 1 };
    crate::util::Cache::new(concat)
}

#[cfg(test)]
mod tests {
    fn helper() -> u8 { 1 }

    #[test]
    fn uses_helper() {
        assert_eq!(helper(), 1);
        alloc::vec![helper()];
    }
}
"""

TUPLE = b"""pub struct Cache;
impl Cache { pub fn reset(&mut self) {} }
pub struct Engine;
impl Engine { pub fn search(&self) {} }
pub struct Wrapper(Option<Cache>, pub Engine);
impl Wrapper {
    fn run(&mut self) { self.0.as_mut().unwrap().reset(); self.1.search(); }
}
"""

REEXPORTS = b"""mod nfa;
mod compiler;

pub use self::nfa::{NFA, State as NfaState};
pub use compiler::Compiler;
use crate::util::Thing;
"""


def _state(path: str, source: bytes) -> FileState:
    return build_state(FileStateBuilder(), path, source)


def _calls(state: FileState, caller: str) -> set[str]:
    prefix = f"r::{state.path}::"
    return {
        e.dst.removeprefix(prefix) if e.ref is None else f"ref:{e.ref.name}@{e.ref.module}"
        for e in state.edges
        if e.type in (EdgeType.CALLS, EdgeType.INSTANTIATES) and e.src == f"{prefix}{caller}"
    }


def test_calls_in_standard_macros_and_through_unwrap_and_question_marks() -> None:
    state = _state("src/lib.rs", LIB)
    calls = _calls(state, "Lit.chains")
    # ``assert_eq!(self.pop().unwrap().len(), ..)``: a call inside the macro, through unwrap
    assert {"Lit.pop", "Frame.len", "Lit.get", "Frame.unwrap_class", "Lit.is_exact"} <= calls
    # A test module's own functions call each other by bare name; ``alloc::vec!`` too.
    assert "tests.helper" in _calls(state, "tests.uses_helper")


def test_patterns_loops_closures_and_clones_type_their_names() -> None:
    state = _state("src/lib.rs", LIB)
    # ``Kind::Bytes(ref frame)``: the variant's payload; ``Some(frame) = self.pop()``:
    # what ``pop`` returns inside the ``Option``.
    assert {"Frame.len", "Lit.is_exact", "Frame.unwrap_class"} <= _calls(state, "Lit.patterns")
    elements = _calls(state, "Lit.elements")
    assert {"Frame.len", "Lit.is_exact"} <= elements  # ``more.iter()``, ``lits.iter().all``


def test_paths_generic_bounds_and_a_module_named_like_a_variable() -> None:
    calls = _calls(_state("src/lib.rs", LIB), "visit")
    assert "Visitor.start" in calls  # ``visitor: V`` with ``V: Visitor``
    # ``ast::Concat`` is the module's struct although a variable ``ast: Ast`` is in scope.
    assert "ref:ast.Concat@crate" in calls
    assert "ref:new@crate::util::Cache" in calls  # a path from the crate's root


def test_a_re_exported_type_stands_for_the_type_it_names() -> None:
    state = _state("src/nfa/thompson/mod.rs", REEXPORTS)
    classes = {s.name for s in state.symbols if s.kind.value == "class"}
    assert classes == {"NFA", "NfaState", "Compiler"}  # not ``Thing``: no ``pub``
    bases = {
        (e.src.rsplit("::", 1)[-1], f"{e.ref.name}@{e.ref.module}")
        for e in state.edges
        if e.type is EdgeType.INHERITS_FROM and e.ref is not None
    }
    module = "crate::nfa::thompson"
    assert bases == {
        ("NFA", f"NFA@{module}::nfa"),
        ("NfaState", f"State@{module}::nfa"),
        ("Compiler", f"Compiler@{module}::compiler"),  # ``mod compiler;``: this module's child
    }


def test_only_the_standard_macros_are_opened_and_offsets_are_kept() -> None:
    source = b'format!("{}", a.b()); std::vec![x]; my::vec![y]; myformat!(z); matches!(q, A);'
    opened = with_open_macros(source)
    assert len(opened) == len(source)
    blank = b" " * len(b"std::vec!")
    assert opened == (
        b'       ("{}", a.b()); ' + blank + b"[x]; my::vec![y]; myformat!(z); matches!(q, A);"
    )


def test_called_text_drops_the_calls_that_pass_a_value_through() -> None:
    assert called_text("self.pop().unwrap") == "self.pop"
    assert called_text("self.get(a, b(c)).unwrap().clone") == "self.get"
    assert called_text("self.items.clone") == "self.items.clone"  # no call to pass through
    assert called_text("a.b") == "a.b"
    # A hostile chain longer than real code writes stays as written (each step scans it).
    hostile = "x.f()" + ".clone()" * 20_000 + ".unwrap"
    assert called_text(hostile) == hostile


def test_a_tuple_structs_fields_type_self_dot_index() -> None:
    calls = _calls(_state("src/wrapper.rs", TUPLE), "Wrapper.run")
    assert {"Cache.reset", "Engine.search"} <= calls  # ``self.0`` through ``as_mut().unwrap()``


ALIASED = b"""pub struct DFA<T> { table: T }
pub type OwnedDFA = DFA<Vec<u32>>;
type Result<T> = Result<T, Error>;

impl OwnedDFA {
    pub fn new() -> OwnedDFA { OwnedDFA::builder() }
    pub fn builder() -> OwnedDFA { DFA { table: vec![] } }
}

impl<T> DFA<T> {
    pub fn is_match(&self) -> bool { true }
}

fn search(d: &DFA<Vec<u32>>) -> bool {
    let owned = OwnedDFA::new();
    owned.is_match() && d.is_match()
}
"""


def test_a_type_alias_names_its_type_and_its_impl_blocks_are_the_types() -> None:
    state = _state("src/dfa/dense.rs", ALIASED)
    methods = {s.qualified_name for s in state.symbols if s.kind.value == "function"}
    assert {"DFA.new", "DFA.builder", "DFA.is_match"} <= methods  # ``impl OwnedDFA``: DFA's
    assert _calls(state, "search") == {"DFA.new", "DFA.is_match"}
    assert _calls(state, "DFA.new") == {"DFA.builder"}  # ``OwnedDFA::builder()``
    bases = {(e.src.rsplit("::", 1)[-1], e.dst.rsplit("::", 1)[-1])
             for e in state.edges if e.type is EdgeType.INHERITS_FROM}  # fmt: skip
    assert bases == {("OwnedDFA", "DFA")}  # ``type Result<T> = Result<..>``: no self-base


DELEGATING = b"""pub trait Automaton { fn has_empty(&self) -> bool; }
pub trait Endian { fn write_u32(n: u32, dst: &mut [u8]); }

impl<'a, A: Automaton + ?Sized> Automaton for &'a A {
    fn has_empty(&self) -> bool { (**self).has_empty() }
}

pub fn write<E: Endian>(dst: &mut [u8]) { E::write_u32(1, dst); }
pub fn plain(dst: &mut [u8]) { Endian::write_u32(1, dst); }
"""


def test_a_reference_delegates_to_its_trait_and_a_bounded_parameter_names_its_bound() -> None:
    state = _state("src/util/wire.rs", DELEGATING)
    assert _calls(state, "has_empty") == {"Automaton.has_empty"}  # ``(**self).has_empty()``
    assert _calls(state, "write") == {"Endian.write_u32"}  # ``E::write_u32`` with E: Endian
    assert _calls(state, "plain") == {"Endian.write_u32"}


OPTIONS = b"""pub struct Cache { n: usize }
impl Cache { pub fn memory_usage(&self) -> usize { self.n } }
pub struct HalfMatch { o: usize }
impl HalfMatch { pub fn offset(&self) -> usize { self.o } }
pub struct Wrapper(Option<Cache>);

impl Wrapper {
    fn usage(&self) -> usize { self.0.as_ref().map_or(0, |e| e.memory_usage()) }
}

fn later(mat: Option<HalfMatch>) -> bool { mat.map_or(false, |m| m.offset() > 0) }
fn mapped(maybe: &Option<HalfMatch>) -> Option<usize> { maybe.map(|hm| hm.offset()) }
fn unknown(count: usize) -> usize { count.map(|c| c.offset()) }
"""


def test_an_options_adapters_hand_their_closure_what_it_holds() -> None:
    state = _state("src/meta/wrappers.rs", OPTIONS)
    assert "Cache.memory_usage" in _calls(state, "Wrapper.usage")  # ``self.0``: Option<Cache>
    assert "HalfMatch.offset" in _calls(state, "later")
    assert "HalfMatch.offset" in _calls(state, "mapped")
    assert "HalfMatch.offset" not in _calls(state, "unknown")  # no option: nothing held
