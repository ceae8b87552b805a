"""The Rust side of ``correctness.py``: every call rustc's MIR makes (``rustc +nightly
-Zunpretty=mir -Zmir-include-spans=yes``: the callee rustc resolved, at the call's span;
a nightly toolchain from rustup, as these machines have, since Debian's rustc has no
``-Z`` flags; the suite's pinned test reads a stored copy and needs no rustc),
mapped onto patchstream's symbols as the TypeScript checker's are
(``_ts_reference.edges_from_lines``).

MIR names a callee by path (``IntervalSet::<I>::negate``, ``<Self as Interval>::lower``,
``hir::literal::Literal::exact``), not by place; the path is found in the sources with
tree-sitter: an inherent method in the ``impl`` blocks of the type of that name (its module
qualifiers pick among types of one name), a trait method in the ``impl Trait for Type``
that defines it, else in the trait (its default body or its declaration), a function in
the module its path names. A path several definitions fit is left out and counted.

Only calls written in the source are kept: the span's text ends in ``)`` and names the
callee, so what MIR adds (``?``, operators, ``for``'s ``next``, drops, derives) is not. A
struct built by a literal (``Position { .. }``, ``Literal(..)``) is an edge to the struct,
as ``T{..}`` is in Go's reference. The crate is compiled with ``--test``: its unit tests'
calls are measured too."""

from __future__ import annotations

import json
import lzma
import re
import subprocess
import tarfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import tree_sitter as ts
import tree_sitter_rust

from _c_reference import c_tree
from _ts_reference import Caller, edges_from_lines
from patchstream.schemas.state import FileState

NIGHTLY = "+nightly"


@dataclass(frozen=True)
class RustCorpus:
    name: str
    mirror: Path
    commit: str
    crate: str  # the crate's folder in the repository
    features: tuple[str, ...]
    licence: str
    externs: tuple[str, ...] = ()  # corpora this crate depends on, compiled first
    edition: str = "2021"
    tests: bool = True  # False: its unit tests need crates not here, left out on both sides

    @property
    def label(self) -> str:
        return f"{self.crate} at {self.commit} ({self.licence})"

    @property
    def crate_name(self) -> str:
        return self.crate.replace("-", "_")


_REGEX = Path("/work/.mirror/rust-lang+regex/repo")
_UNICODE = (
    "unicode",
    "unicode-age",
    "unicode-bool",
    "unicode-case",
    "unicode-gencat",
    "unicode-perl",
    "unicode-script",
    "unicode-segment",
)
RUST_CORPORA = {
    # The rules were settled on regex-syntax; regex-automata (another crate, held out) was
    # measured as found first.
    "regex-syntax": RustCorpus(
        "regex-syntax",
        _REGEX,
        "regex-syntax-0.8.9",
        "regex-syntax",
        ("std", *_UNICODE),
        "MIT OR Apache-2.0",
    ),
    "regex-automata": RustCorpus(
        "regex-automata",
        _REGEX,
        "regex-automata-0.4.14",
        "regex-automata",
        (
            "std",
            "alloc",
            "syntax",
            "meta",
            "nfa",
            "nfa-thompson",
            "nfa-backtrack",
            "nfa-pikevm",
            "dfa",
            "dfa-build",
            "dfa-search",
            "dfa-onepass",
            "hybrid",
            "unicode",
            *_UNICODE[1:],
        ),
        "MIT OR Apache-2.0",
        externs=("regex-syntax",),
        tests=False,
    ),
}


def rust_tree(corpus: RustCorpus) -> Path:
    """The crate's ``src`` at its pinned tag, under a folder named for the corpus, as rustc
    compiles it: each item a ``#[cfg(..)]`` leaves out (a feature not enabled, tests where
    they are left out) is blanked, its lines kept, so both sides read the same code."""
    root = c_tree(_Archived(corpus.name, corpus.mirror, corpus.commit, (f"{corpus.crate}/src",)))
    parser = ts.Parser(ts.Language(tree_sitter_rust.language()))
    for path in (root / corpus.crate / "src").rglob("*.rs"):
        source = bytearray(path.read_bytes())
        for start, end in _left_out(parser.parse(bytes(source)).root_node, source, corpus):
            source[start:end] = re.sub(rb"[^\n]", b" ", bytes(source[start:end]))
        path.write_bytes(bytes(source))
    return root


_CFG = re.compile(r"#\[cfg\((.*)\)\]", re.DOTALL)


def _left_out(node: ts.Node, source: bytes, corpus: RustCorpus) -> list[tuple[int, int]]:
    """Byte ranges of the items (all their attributes included) a ``#[cfg(..)]`` leaves
    out."""
    found: list[tuple[int, int]] = []
    first: ts.Node | None = None  # the first attribute of the run before an item
    conditions: list[bool | None] = []
    for child in node.named_children:
        if child.type == "attribute_item":
            first = first or child
            text = source[child.start_byte : child.end_byte].decode()
            condition = _CFG.fullmatch(text)
            conditions += [_cfg(condition[1], corpus)] if condition else []
            continue
        if child.type in ("line_comment", "block_comment"):  # doc comments go with it
            inner = source[child.start_byte : child.start_byte + 3] in (b"//!", b"/*!")
            first = None if inner else first or child  # a module's own doc stays
            continue
        if child.type == "field_initializer":  # ``Config { #[cfg(test)] a: x, .. }``
            own = [each for each in child.named_children if each.type == "attribute_item"]
            first = first or (own[0] if own else None)
            conditions += [
                _cfg(m[1], corpus)
                for each in own
                if (m := _CFG.fullmatch(source[each.start_byte : each.end_byte].decode()))
            ]
        if first is not None and False in conditions:
            after = child.next_sibling  # a field's comma goes with it
            end = after.end_byte if after is not None and after.type == "," else child.end_byte
            found.append((first.start_byte, end))
        elif child.named_child_count:
            found += _left_out(child, source, corpus)
        first, conditions = None, []
    return found


def _cfg(condition: str, corpus: RustCorpus) -> bool | None:
    """A ``cfg`` predicate under the corpus's features (None: one this cannot tell, such as
    ``target_arch``: kept)."""
    condition = condition.strip()
    feature = re.fullmatch(r'feature\s*=\s*"([^"]+)"', condition)
    if feature:
        return feature[1] in corpus.features
    if condition == "test":
        return corpus.tests
    call = re.fullmatch(r"(not|all|any)\s*\((.*)\)", condition, re.DOTALL)
    if call is None:
        return None
    parts = [_cfg(part, corpus) for part in _split_top(call[2], ",") if part.strip()]
    if call[1] == "not":
        return None if parts[0] is None else not parts[0]
    if call[1] == "all":
        return False if False in parts else (None if None in parts else True)
    return True if True in parts else (None if None in parts else False)


@dataclass(frozen=True)
class _Archived:
    name: str
    mirror: Path
    commit: str
    archived: tuple[str, ...]


def rustc_version() -> str:
    return subprocess.run(
        ["rustc", NIGHTLY, "--version"], check=True, capture_output=True, text=True
    ).stdout.strip()


def _compile(corpus: RustCorpus, *unpretty: str) -> subprocess.CompletedProcess[str]:
    crate_root = rust_tree(corpus) / corpus.crate
    out = crate_root.parent / "target"
    out.mkdir(exist_ok=True)
    externs = []
    for name in corpus.externs:
        dep = RUST_CORPORA[name]
        rlib = rust_tree(dep) / "target" / f"lib{dep.crate_name}.rlib"
        if not rlib.exists():
            _compile(dep, "--emit=metadata,link", "-o", str(rlib)).check_returncode()
        externs += ["--extern", f"{dep.crate_name}={rlib}"]
    features = [arg for feature in corpus.features for arg in ("--cfg", f'feature="{feature}"')]
    return subprocess.run(
        [
            "rustc",
            NIGHTLY,
            "--edition",
            corpus.edition,
            "--crate-type",
            "lib",
            "--crate-name",
            corpus.crate_name,
            "--cap-lints",
            "allow",
            *features,
            *externs,
            *unpretty,
            "src/lib.rs",
        ],
        cwd=crate_root,
        capture_output=True,
        text=True,
    )


# ``_3 = Path::<G>::m(copy _1) -> [return: bb1, ..]; // scope 0 at src/a.rs:3:5: 3:14``
_CALL = re.compile(
    r"^\s*(?:_\d+ = )?(?P<call>.+) -> (?:\[return|unwind).*"
    r"// scope \d+ at (?P<file>[^:]+):(?P<l1>\d+):(?P<c1>\d+): "
    r"(?P<l2>\d+):(?P<c2>\d+)$"
)


# ``_18 = Comment { span: move _19, .. }; // scope 2 at src/a.rs:577:31: 580:18``
_BUILT = re.compile(
    r"^\s*_\d+ = (?P<call>[\w:]+(?:::<.*?>)?)(?: \{|\().*;\s+"
    r"// scope \d+ at (?P<file>[^:]+):(?P<l1>\d+):(?P<c1>\d+): "
    r"(?P<l2>\d+):(?P<c2>\d+)$"
)


@dataclass
class RustReference:
    lines: list[str]  # edges_from_lines' JSON lines
    zero_sized: list[str]  # JSON lines [file, first line] of structs MIR never builds
    calls: int  # calls written in the source whose callee the crate defines
    ambiguous: int  # of those, paths several definitions fit (left out)


def rust_reference(corpus: RustCorpus) -> RustReference:
    tests = ("--test",) if corpus.tests else ()
    done = _compile(corpus, *tests, "-Zunpretty=mir", "-Zmir-include-spans=yes")
    done.check_returncode()
    crate_root = rust_tree(corpus) / corpus.crate
    index = _Definitions(crate_root)
    texts: dict[str, list[str]] = {}
    lines, calls, ambiguous = [], 0, 0
    for raw in done.stdout.splitlines():
        found = _CALL.match(raw) if " -> " in raw else _BUILT.match(raw)
        if found is None or found["file"].startswith("/"):
            continue
        built = " -> " not in raw
        callee = _callee_path(found["call"] + "(" if built else found["call"])
        if callee is None:
            continue
        file = found["file"]
        if file not in texts:
            texts[file] = (crate_root / file).read_text().splitlines()
        span = _span_text(texts[file], *(int(found[k]) for k in ("l1", "c1", "l2", "c2")))
        if not _written(span, callee[3] if callee[0] == "<" else callee[-1], built):
            continue
        targets = index.resolve_type(callee) if built else index.resolve(callee)
        if not targets:
            continue
        calls += 1
        if len(targets) > 1:
            ambiguous += 1
            continue
        dst_file, start, name_line = targets[0]
        lines.append(
            json.dumps(
                [
                    f"{corpus.crate}/{file}",
                    int(found["l1"]),
                    f"{corpus.crate}/{dst_file}",
                    start,
                    name_line,
                ]
            )
        )
    zero_sized = [json.dumps([f"{corpus.crate}/{f}", start]) for f, start, _ in index.zero_sized]
    return RustReference(lines, zero_sized, calls, ambiguous)


def rust_edges(
    corpus: RustCorpus, states: dict[str, FileState], caller: Caller
) -> tuple[set[tuple[str, str]], RustReference]:
    reference = rust_reference(corpus)
    root = rust_tree(corpus)
    return edges_from_lines(reference.lines, root, corpus.name, states, caller), reference


def pin_rust_reference(corpus: RustCorpus, out: Path, leave_out: str = "unicode_tables") -> int:
    """The crate's ``src/`` as compiled (``rust_tree``), without the folder ``leave_out``
    (data tables, no calls), as ``out/<crate>-<tag>-src.tar.xz``, and rustc's lines for it
    as ``.mir.jsonl.xz`` beside it (files relative to ``src/``; a structure of no data as a
    two-item line): a pinned test's reference. Returns the count of edge lines."""
    reference = rust_reference(corpus)
    src = rust_tree(corpus) / corpus.crate / "src"
    stem = out / f"{corpus.crate}-{corpus.commit.rsplit('-', 1)[-1]}-src"
    with tarfile.open(f"{stem}.tar.xz", "w:xz") as archive:
        for path in sorted(src.rglob("*.rs")):
            rel = path.relative_to(src)
            if rel.parts[0] != leave_out:
                archive.add(path, arcname=f"src/{rel}")
    prefix = f"{corpus.crate}/src/"
    lines = []
    for raw in reference.lines + reference.zero_sized:
        item = json.loads(raw)
        files = [i for i, value in enumerate(item) if isinstance(value, str)]
        if any(item[i].removeprefix(prefix).startswith(leave_out) for i in files):
            continue
        for i in files:
            item[i] = item[i].removeprefix(prefix)
        lines.append(json.dumps(item))
    lines = list(dict.fromkeys(lines))  # one line per call site and callee
    Path(f"{stem}.mir.jsonl.xz").write_bytes(
        lzma.compress("".join(f"{line}\n" for line in lines).encode())
    )
    return sum(len(json.loads(line)) == 5 for line in lines)


def _written(span: str, name: str, built: bool) -> bool:
    """Whether the span is the call (or the literal) as written, not a call MIR added."""
    if built:
        return re.match(rf"(\w+::)*({name}|Self)\s*(::<.*>)?\s*[{{(]", span) is not None
    return span.rstrip().endswith(")") and re.search(rf"\b{name}\s*(\(|::<)", span) is not None


def _span_text(lines: list[str], l1: int, c1: int, l2: int, c2: int) -> str:
    if l1 == l2:
        return lines[l1 - 1][c1 - 1 : c2 - 1]
    return "\n".join([lines[l1 - 1][c1 - 1 :], *lines[l1 : l2 - 1], lines[l2 - 1][: c2 - 1]])


def _split_top(text: str, sep: str = "::") -> list[str]:
    """``text`` split on ``sep`` outside ``<..>``."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        if char == "<":
            depth += 1
        elif char == ">" and i > 0 and text[i - 1] != "-":
            depth -= 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _base(type_text: str) -> str:
    """``&mut hir::Class<'_>`` -> ``hir::Class``: the path of a type without its arguments."""
    text = type_text.strip().lstrip("&*").removeprefix("mut ").removeprefix("const ").strip()
    return "::".join(part for part in _split_top(_strip_args(text)) if part)


def _strip_args(text: str) -> str:
    out, depth = [], 0
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _callee_path(call: str) -> tuple[str, ...] | None:
    """``<A as T<X>>::m(..)`` -> ("<", "A", "T", "m", "T<X>"); ``a::B::<G>::m(..)`` ->
    ("a", "B", "m")."""
    depth = 0
    for i, char in enumerate(call):
        if char == "<":
            depth += 1
        elif char == ">" and call[i - 1] != "-":
            depth -= 1
        elif char == "(" and depth == 0:
            path = call[:i].removeprefix("const ").strip()
            break
    else:
        return None
    if path.startswith("<"):
        parts = _split_top(path)
        qualified = parts[0][1:-1]
        self_type, _, trait = qualified.rpartition(" as ")
        if not self_type or len(parts) != 2:
            return None
        return ("<", _base(self_type), _base(trait), parts[1], trait)
    segments = tuple(p for p in _split_top(path) if p and not p.startswith("<"))
    if not segments or not all(re.fullmatch(r"\w+", s) for s in segments):
        return None
    return segments[1:] if segments[0] == "crate" else segments


_PLACE = tuple[str, int, int]  # file, the item's first line, its name's line


class _Definitions:
    """Where the crate's functions, methods and types are, read with tree-sitter."""

    def __init__(self, crate_root: Path) -> None:
        parser = ts.Parser(ts.Language(tree_sitter_rust.language()))
        self.types: dict[str, list[tuple[tuple[str, ...], _PLACE]]] = defaultdict(list)
        self.functions: dict[str, list[tuple[tuple[str, ...], _PLACE]]] = defaultdict(list)
        # (type, method) -> [(the type's module if known, place)]; trait impls by trait too
        self.inherent: dict[tuple[str, str], list[tuple[tuple[str, ...] | None, _PLACE]]] = (
            defaultdict(list)
        )
        self.by_trait: dict[tuple[str, str, str], list[tuple[tuple[str, ...] | None, _PLACE]]] = (
            defaultdict(list)
        )
        self.trait_methods: dict[tuple[str, str], list[tuple[tuple[str, ...], _PLACE]]] = (
            defaultdict(list)
        )
        self.zero_sized: set[_PLACE] = set()  # structs MIR builds no value of (no fields)
        self.trait_texts: dict[_PLACE, str] = {}  # a trait impl's method -> the trait as written
        impls: list[tuple[str, tuple[str, ...], ts.Node, bytes]] = []
        for path in sorted((crate_root / "src").rglob("*.rs")):
            rel = str(path.relative_to(crate_root))
            source = path.read_bytes()
            module = _module_of(rel)
            tree = parser.parse(source)
            self._read(tree.root_node, rel, module, source, impls)
        for rel, module, node, source in impls:
            self._read_impl(rel, module, node, source)

    def _read(
        self,
        node: ts.Node,
        rel: str,
        module: tuple[str, ...],
        source: bytes,
        impls: list[tuple[str, tuple[str, ...], ts.Node, bytes]],
    ) -> None:
        for child in node.named_children:
            kind = child.type
            name = child.child_by_field_name("name")
            text = source[name.start_byte : name.end_byte].decode() if name else ""
            if kind in ("struct_item", "enum_item", "union_item", "type_item", "trait_item"):
                self.types[text].append((module, _place(rel, child, name)))
            if kind == "struct_item" and _zero_sized(child, source):
                self.zero_sized.add(_place(rel, child, name))
            if kind == "function_item":
                self.functions[text].append((module, _place(rel, child, name)))
                self._read_nested(child, rel, (*module, text), source)
            elif kind == "trait_item":
                body = child.child_by_field_name("body")
                for item in body.named_children if body else ():
                    if item.type in ("function_item", "function_signature_item"):
                        method = item.child_by_field_name("name")
                        self.trait_methods[(text, _text(source, method))].append(
                            (module, _place(rel, item, method))
                        )
            elif kind == "impl_item":
                impls.append((rel, module, child, source))
            elif kind == "mod_item" and child.child_by_field_name("body") is not None:
                self._read(child.child_by_field_name("body"), rel, (*module, text), source, impls)

    def _read_nested(self, node: ts.Node, rel: str, path: tuple[str, ...], source: bytes) -> None:
        """Functions declared in a function's body: MIR names them ``outer::inner``."""
        for child in node.named_children:
            if child.type == "function_item":
                name = child.child_by_field_name("name")
                self.functions[_text(source, name)].append((path, _place(rel, child, name)))
                self._read_nested(child, rel, (*path, _text(source, name)), source)
            elif child.type not in ("impl_item", "mod_item", "trait_item"):
                self._read_nested(child, rel, path, source)

    def _read_impl(self, rel: str, module: tuple[str, ...], node: ts.Node, source: bytes) -> None:
        type_base = _base(_text(source, node.child_by_field_name("type")))
        trait_node = node.child_by_field_name("trait")
        trait = _base(_text(source, trait_node)).rsplit("::", 1)[-1] if trait_node else None
        arguments = _plain(_text(source, trait_node)) if trait_node else ""
        name = type_base.rsplit("::", 1)[-1]
        owners = [each for each, _ in self.types.get(name, [])]
        owner = module if module in owners else (owners[0] if len(owners) == 1 else None)
        body = node.child_by_field_name("body")
        for item in body.named_children if body else ():
            if item.type != "function_item":
                continue
            method_node = item.child_by_field_name("name")
            method = _text(source, method_node)
            place = _place(rel, item, method_node)
            if trait is None:
                self.inherent[(name, method)].append((owner, place))
            else:
                self.by_trait[(name, trait, method)].append((owner, place))
                self.trait_texts[place] = arguments

    def resolve(self, callee: tuple[str, ...]) -> list[_PLACE]:
        """Every definition the MIR path fits (none: not the crate's)."""
        if callee[0] == "<":
            _, self_type, trait, method, written = callee
            *modules, type_name = self_type.split("::")
            *trait_modules, trait_name = trait.split("::")
            in_impl = _within(self.by_trait.get((type_name, trait_name, method), []), modules)
            if len(in_impl) > 1:  # ``From<&ast::Error>`` and ``From<&hir::Error>``: by arguments
                in_impl = [p for p in in_impl if self.trait_texts.get(p) == _plain(written)]
            declared = self.trait_methods.get((trait_name, method), [])
            return in_impl or _within(declared, trait_modules)
        *qualifiers, name = callee
        if qualifiers and qualifiers[-1] in self.types:
            return _within(self.inherent.get((qualifiers[-1], name), []), qualifiers[:-1])
        return _within(self.functions.get(name, []), qualifiers)

    def resolve_type(self, path: tuple[str, ...]) -> list[_PLACE]:
        """The struct a literal builds (none: an enum's variant, or not the crate's)."""
        *qualifiers, name = path
        return _within(self.types.get(name, []), qualifiers)


def _within(
    found: list[tuple[tuple[str, ...] | None, _PLACE]], qualifiers: list[str]
) -> list[_PLACE]:
    """The places whose module ends with the path's qualifiers (``hir::Literal``: hir's)."""
    modules = tuple(qualifiers)
    return [
        place
        for module, place in found
        if module is None or module[max(0, len(module) - len(modules)) :] == modules
    ]


def _plain(trait: str) -> str:
    """A trait as written, comparable across MIR and source: no lifetimes, no spaces, each
    path's last part only (``From<&'e ast::Error>`` -> ``From<&Error>``)."""
    text = re.sub(r"'\w+\s*,?\s*", "", trait)
    text = re.sub(r"(\w+::)+", "", text)
    return "".join(text.split()).replace("<>", "")


def _zero_sized(struct: ts.Node, source: bytes) -> bool:
    """A struct whose fields are all ``()`` or ``PhantomData``: MIR builds no value of it."""
    body = struct.child_by_field_name("body")
    if body is None:
        return True
    if body.type == "ordered_field_declaration_list":  # ``struct Id(u32)``
        types = [
            t
            for t in body.named_children
            if t.type not in ("attribute_item", "visibility_modifier")
        ]
    else:
        types = [
            f.child_by_field_name("type")
            for f in body.named_children
            if f.type == "field_declaration"
        ]
    return all(
        t is not None
        and re.fullmatch(rb"\(\)|PhantomData(<.*>)?", source[t.start_byte : t.end_byte])
        for t in types
    )


def _module_of(rel: str) -> tuple[str, ...]:
    parts = rel.removeprefix("src/").removesuffix(".rs").split("/")
    if parts[-1] in ("lib", "mod", "main"):
        parts = parts[:-1]
    return tuple(parts)


def _text(source: bytes, node: ts.Node | None) -> str:
    return source[node.start_byte : node.end_byte].decode() if node is not None else ""


def _place(rel: str, item: ts.Node, name: ts.Node | None) -> _PLACE:
    name_line = (name or item).start_point[0] + 1
    return (rel, item.start_point[0] + 1, name_line)
