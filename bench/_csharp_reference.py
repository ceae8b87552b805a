"""The C# side of ``correctness.py``: real C# projects from Debian's source archive, compiled
by Debian's Mono C# compiler (``mcs``); caller edges read from the compiled IL (``monodis``):
every ``call``, ``callvirt`` and ``newobj`` names the method the compiler bound. Needs
``apt-get install mono-mcs mono-utils libmono-posix4.0-cil`` (the bench says so).

Mapped onto patchstream's symbols by full name (``dnlib.DotNet.ModuleDef.Find``):
- a constructor is compared as its class (``newobj`` and ``: base(..)`` both), on both sides,
  and so is the code of property accessors, operators and initializers (extraction gives
  their calls to the class);
- overloads are one name (the IL's signatures are not compared);
- a lambda's or an iterator's generated method is the method it was written in;
- property reads (``get_X``), delegate ``Invoke`` and method groups (``ldftn``) are no
  written call and are left out;
- the IL names an override by the first virtual declaration it overrides (``callvirt
  Base::M`` for a ``Derived`` receiver): both sides' callees are compared at that root.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from _java_reference import JavaCorpus, java_tree
from patchstream.schemas.graph import SymbolKind
from patchstream.schemas.state import FileState

Edge = tuple[str, str]


@dataclass(frozen=True)
class CSharpCorpus(JavaCorpus):
    references: tuple[str, ...] = ()  # assemblies beside the framework's (``-r:``)
    packages: tuple[str, ...] = ()  # the Debian packages that hold them


CSHARP_CORPORA = {
    "dnlib": CSharpCorpus(
        "dnlib", "2.1", "MIT", "d/dnlib/dnlib_2.1.orig.tar.gz",
        "eb2d35a27a68ca37568659615d93cf2a544527d0ba7428a7e2852b7592362556",
        "dnlib-2.1_VS2010/src",
    ),
    # Held out: measured once C#'s rules were settled on dnlib.
    "dbus-sharp": CSharpCorpus(
        "dbus-sharp", "0.8.1", "MIT", "d/dbus-sharp/dbus-sharp_0.8.1.orig.tar.gz",
        "0866c001f2d6e01a6f1b4d080db08d25ba1422e34c7d03020e0e70f3de3a9859",
        "dbus-sharp-0.8.1/src", ("Mono.Posix.dll",), ("libmono-posix4.0-cil",),
    ),
}  # fmt: skip

csharp_tree = java_tree  # the upstream tarball Debian ships, unpacked on first use

_CALL = re.compile(r"^\s*IL_[0-9a-f]+:\s+(call|callvirt|newobj)\s+(.*)$")
_ACCESSOR = re.compile(r"^(get|set|add|remove)_")
_NOT_WRITTEN = frozenset({"Invoke", "BeginInvoke", "EndInvoke", ".cctor", "Finalize"})
# The compiler's own names (``<Outer>c__AnonStorey2``, ``<Outer>m__0``, ``<>m__0``) are
# rewritten ``{Outer}c__..`` first, so that every ``<...>`` left is a generic argument list.
_GENERATED_MARK = re.compile(r"<([\w$]*)>(\w)__")
_GENERATED = re.compile(r"^\{([^}]*)\}")


def _without_generics(text: str) -> str:
    """``Foo`1<!!T>`` -> ``Foo`1``: every balanced ``<...>`` removed."""
    out, depth = [], 0
    for char in _GENERATED_MARK.sub(r"{\1}\2__", text):
        if char == "<":
            depth += 1
        elif char == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    return "".join(out)


def _type_name(written: str) -> str | None:
    """``class dnlib.DotNet.Outer/'Inner`1'<!0>`` -> ``dnlib.DotNet.Outer.Inner``; None for
    another assembly's type (``[mscorlib]System.Object``)."""
    token = _without_generics(written).split()[-1] if written.split() else ""
    if not token or token.startswith("[") or token.startswith("!"):
        return None
    parts = [re.sub(r"`\d+$", "", p.strip("'")) for p in token.split("/")]
    return ".".join(parts)


@dataclass
class _Method:
    owner: str  # the class's full name
    name: str
    virtual: bool
    newslot: bool


@dataclass
class CompiledCalls:
    """What the IL says: (caller, callee) by full name, and each class's base."""

    edges: set[Edge] = field(default_factory=set)
    bases: dict[str, str] = field(default_factory=dict)
    overriding: set[str] = field(default_factory=set)  # ``C.M``: a virtual, not newslot
    declared: set[str] = field(default_factory=set)

    def root(self, name: str) -> str:
        """``Derived.M`` -> the first base's ``M`` it overrides (transitively)."""
        owner, _, method = name.rpartition(".")
        seen = set()
        while name in self.overriding and owner not in seen:
            seen.add(owner)
            base = self.bases.get(owner)
            while base is not None and f"{base}.{method}" not in self.declared:
                base = self.bases.get(base)
            if base is None:
                break
            owner, name = base, f"{base}.{method}"
        return name


def read_il(text: str) -> CompiledCalls:
    """Parse ``monodis`` output."""
    calls = CompiledCalls()
    namespace = ""
    classes: list[str] = []
    method: _Method | None = None
    pending: list[str] | None = None  # a ``.method`` header until its name's ``(``
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(".namespace "):
            namespace = stripped.split()[1]
        elif line.startswith("}") and not classes:
            namespace = ""
        elif stripped.startswith(".class "):
            header = _without_generics(stripped.removesuffix("{").strip())
            name = header.split()[-1].strip("'")
            classes.append(re.sub(r"`\d+$", "", name))
        elif stripped.startswith("extends ") and classes:
            base = _type_name(stripped.removeprefix("extends "))
            if base is not None:
                calls.bases[_full(namespace, classes)] = base
        elif stripped.startswith("} // end of class"):
            classes.pop()
        elif stripped.startswith(".method "):
            pending = [stripped]
        elif pending is not None:
            pending.append(stripped)
            joined = " ".join(pending)
            if "(" in joined:
                head = _without_generics(joined.split("(", 1)[0]).split()
                name = head[-1].strip("'") if head else ""
                name = name.rsplit(".", 1)[-1] if "." in name.strip(".") else name
                flags = pending[0].split()
                method = _Method(_full(namespace, classes), name, "virtual" in flags,
                                 "newslot" in flags)  # fmt: skip
                calls.declared.add(f"{method.owner}.{name}")
                if method.virtual and not method.newslot:
                    calls.overriding.add(f"{method.owner}.{name}")
                pending = None
        elif method is not None and (found := _CALL.match(line)):
            caller = _caller(method)
            callee = _callee(found.group(2))
            if caller is not None and callee is not None:
                calls.edges.add((caller, callee))
    return calls


def _full(namespace: str, classes: list[str]) -> str:
    return ".".join(p for p in (namespace, *classes) if p)


def _caller(method: _Method) -> str | None:
    """The symbol extraction gives a call in ``method`` to."""
    owner, name = method.owner, method.name
    outer, _, last = owner.rpartition(".")
    generated_class = _GENERATED.match(last)
    if generated_class:  # a lambda's closure or an iterator: the method it was written in
        return f"{outer}.{generated_class.group(1)}" if generated_class.group(1) else None
    generated = _GENERATED.match(name)
    if generated:
        return f"{owner}.{generated.group(1)}" if generated.group(1) else None
    if name in (".ctor", ".cctor") or _ACCESSOR.match(name) or name.startswith("op_"):
        return owner  # constructors as their class; accessors' and operators' code too
    return f"{owner}.{name}"


def _callee(written: str) -> str | None:
    head, sep, tail = written.partition("::")
    if not sep:
        return None
    owner = _type_name(head)
    name = re.split(r"[(\s]", _without_generics(tail).lstrip("'"), maxsplit=1)[0].strip("'")
    if owner is None or _GENERATED.match(owner.rsplit(".", 1)[-1]) or name.startswith("{"):
        return None
    if name == ".ctor":
        return owner
    if _ACCESSOR.match(name) or name.startswith("op_") or name in _NOT_WRITTEN:
        return None  # a property read, an operator, a delegate's invocation
    return f"{owner}.{name}"


def mcs_calls(root: Path, corpus: CSharpCorpus) -> CompiledCalls:
    """Compile every ``.cs`` under ``root`` into one library and read its IL."""
    if shutil.which("mcs") is None or shutil.which("monodis") is None:
        needed = " ".join(("mono-mcs", "mono-utils", *corpus.packages))
        raise SystemExit(f"the C# reference needs Debian's Mono: apt-get install {needed}")
    with tempfile.TemporaryDirectory() as scratch:
        dll = Path(scratch) / "project.dll"
        references = [f"-r:{name}" for name in corpus.references]
        subprocess.run(["mcs", "-target:library", "-unsafe", "-nowarn:1591,0618,0612,0169,"
                        "0649,0414,0219,0168,0108,0114", *references, f"-out:{dll}",
                        "-recurse:*.cs"], cwd=root, check=True, capture_output=True,
                       text=True)  # fmt: skip
        done = subprocess.run(["monodis", str(dll)], check=True, capture_output=True, text=True)
    return read_il(done.stdout)


def compared_edges(
    states: dict[str, FileState], ours: dict[Edge, int], calls: CompiledCalls
) -> tuple[set[Edge], dict[Edge, int], dict[str, float]]:
    """Both sides as (caller, callee) full names, as the module's docstring says."""
    names: dict[str, str] = {}
    classes: set[str] = set()
    for state in states.values():
        for symbol in state.symbols:
            names[symbol.id] = symbol.qualified_name
            if symbol.kind in (SymbolKind.CLASS, SymbolKind.INTERFACE):
                classes.add(symbol.qualified_name)
    known = set(names.values())

    def as_class(name: str) -> str:
        owner, _, last = name.rpartition(".")
        return owner if owner in classes and owner.rsplit(".", 1)[-1] == last else name

    ranked: dict[Edge, int] = {}
    for (src, dst), rank in ours.items():
        if src not in names or dst not in names:
            continue
        edge = (as_class(names[src]), calls.root(as_class(names[dst])))
        ranked[edge] = min(rank, ranked.get(edge, rank))
    reference = {(src, calls.root(dst)) for src, dst in calls.edges
                 if src in known and dst in known}  # fmt: skip
    ranked = {edge: rank for edge, rank in ranked.items() if edge[0] in known}
    figures = {"il edges": float(len(calls.edges)), "project classes": float(len(classes))}
    return reference, ranked, figures


def mcs_version() -> str:
    done = subprocess.run(["mcs", "--version"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def per_caller(edges: set[Edge]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for src, dst in edges:
        found[src].add(dst)
    return found


_DIRECTIVE = re.compile(rb"^\s*#\s*(if|elif|else|endif)\b(.*)$")


def compiled_text(source: bytes, defines: frozenset[str] = frozenset()) -> bytes:
    """``source`` with the lines of inactive ``#if`` branches blanked (line numbers kept):
    the code the compiler saw. Extraction reads every branch; the reference only the
    compiled ones, so the comparison reads what was compiled."""
    out, stack = [], []  # per open #if: (this branch active, some branch taken)
    for line in source.split(b"\n"):
        found = _DIRECTIVE.match(line)
        active = all(s[0] for s in stack)
        if found is None:
            out.append(line if active else b"")
            continue
        word, expression = found.group(1), found.group(2).split(b"//")[0].strip()
        if word == b"if":
            taken = _true(expression, defines)
            stack.append((taken, taken))
        elif word == b"elif" and stack:
            taken = not stack[-1][1] and _true(expression, defines)
            stack[-1] = (taken, stack[-1][1] or taken)
        elif word == b"else" and stack:
            stack[-1] = (not stack[-1][1], True)
        elif word == b"endif" and stack:
            stack.pop()
        out.append(b"")
    return b"\n".join(out)


_TOKEN = re.compile(r"\s*(\|\||&&|==|!=|!|\(|\)|\w+)")


def _true(expression: bytes, defines: frozenset[str]) -> bool:
    """A ``#if`` condition: symbols, ``true``/``false``, ``!``, ``&&``, ``||``, ``==``,
    ``!=`` and parentheses (C#'s whole preprocessor grammar); anything else is false."""
    tokens = _TOKEN.findall(expression.decode("ascii", "replace"))
    at = 0

    def take() -> str:
        nonlocal at
        at += 1
        return tokens[at - 1] if at <= len(tokens) else ""

    def peek() -> str:
        return tokens[at] if at < len(tokens) else ""

    def unary() -> bool:
        word = take()
        if word == "!":
            return not unary()
        if word == "(":
            value = either()
            take()  # ")"
            return value
        return word == "true" or word in defines

    def equality() -> bool:
        value = unary()
        while peek() in ("==", "!="):
            value = (value == unary()) if take() == "==" else (value != unary())
        return value

    def both() -> bool:
        value = equality()
        while peek() == "&&":
            take()
            value = equality() and value
        return value

    def either() -> bool:
        value = both()
        while peek() == "||":
            take()
            value = both() or value
        return value

    return either()
