"""The Kotlin side of ``correctness.py``: real Kotlin projects at pinned commits, compiled by
Debian's Kotlin compiler (``kotlinc``); caller edges read from the JVM bytecode (``javap -c
-p``): every ``invoke*`` names the method the compiler bound. Needs ``apt-get install
kotlin`` (1.3.31 on Debian 12, so the projects are pinned at commits of 2019).

Mapped onto patchstream's symbols by full name (package + qualified name):
- a constructor is compared as its class on both sides, and so is the code of property
  accessors and initializers;
- a companion object's functions are its class's (``Square.Companion.unit`` is
  ``Square.unit``), a file's top-level functions (``ShapesKt.twice``) are the file's, an
  extension function is its receiver's (``Shape.twice``);
- a lambda's class (``Square$describe$1``) is the function it was written in (left out
  where the file has overloads of that name: the class does not say which), a default
  arguments' bridge (``f$default``: the calls in default values) and a synthetic accessor
  (``access$f``) are ``f``;
- property reads (``getX``) and calls into the standard library are left out;
- a call the bytecode names on a class that inherits the method is the declaring class's;
- recursion is left out on both sides (the bytecode's bridges call their functions: a
  ``@JvmStatic`` method its companion's, a constructor another), and so are calls by
  convention names (``toString``, ``get``, ``invoke``, ``getValue``...) that the compiler
  also writes for operators, templates and delegated properties;
- an ``inline`` function's body is copied into each caller: the bytecode has its calls
  there and no call of it, so our edges through an inline function count as the caller's
  (as for C's forced inlining) and edges to it are left out.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from _c_reference import c_tree
from patchstream.schemas.graph import Symbol, SymbolKind
from patchstream.schemas.state import FileState

Edge = tuple[str, str]
_MODULE = "bench"  # ``internal`` members are compiled as ``name$bench``


@dataclass(frozen=True)
class KotlinCorpus:
    name: str
    mirror: Path
    commit: str
    licence: str
    source_root: str  # the main sources inside the tree
    beside: str = ""  # more sources the compiler needs (the JVM half of a cross-build)

    @property
    def label(self) -> str:
        return f"{self.name} at {self.commit[:10]} ({self.licence})"


SCALA_CORPORA = {
    "scala-swing": KotlinCorpus(
        "scala-swing",
        Path("/work/.mirror/scala+scala-swing/repo"),
        "v2.0.3",
        "BSD-3-Clause",
        "src/main/scala",
    ),
    # Held out: measured once Scala's rules were settled on scala-swing.
    "parser-combinators": KotlinCorpus(
        "parser-combinators",
        Path("/work/.mirror/scala+scala-parser-combinators/repo"),
        "v1.0.7",
        "BSD-3-Clause",
        "shared/src/main/scala",
        "jvm/src/main/scala",
    ),
}

KOTLIN_CORPORA = {
    "clikt": KotlinCorpus("clikt", Path("/work/.mirror/ajalt+clikt/repo"), "2e157000",
                          "Apache-2.0", "clikt/src/main/kotlin"),
    # Held out: measured once Kotlin's rules were settled on clikt.
    "kotlinpoet": KotlinCorpus("kotlinpoet", Path("/work/.mirror/square+kotlinpoet/repo"),
                               "780e7e66", "Apache-2.0", "src/main/java"),
}  # fmt: skip


def kotlin_tree(corpus: KotlinCorpus) -> Path:
    """The corpus's main sources at its pinned commit, unpacked on first use."""
    return c_tree(corpus) / corpus.source_root  # type: ignore[arg-type]


# An interface extends a list (``interface UIElement extends scala.Proxy, LazyPublisher``).
_CLASS = re.compile(r"^(?:[\w ]+ )?(?:class|interface) ([\w.$]+)(?:<.*?>)?"
                    r"(?: extends ([\w.$]+)(?:<.*?>)?((?:, ?[\w.$]+(?:<.*?>)?)*))?"
                    r"(?: implements (.*?))? \{$")  # fmt: skip
_METHOD = re.compile(r"^  (?:[\w.$<>\[\], ?]+ )?([\w.$<>-]+)\(([\w.$]*).*\)(?: throws .*)?;$")
_INVOKE = re.compile(r"invoke(?:virtual|special|static|interface)\s+#\d+(?:,\s+\d+)?\s+"
                     r"// (?:Interface)?Method (?:([\w/$]+)\.)?\"?([\w$<>-]+)\"?:"
                     r"\(L?([\w/$]*)")  # fmt: skip
# Calls the compiler writes for operators and conventions, never written as calls: delegated
# properties, ``a[i]``, ``for``, ``a + b``, destructuring, string templates' ``toString``.
_CONVENTIONS = re.compile(r"^(getValue|setValue|provideDelegate|invoke|get|set|contains|"
                          r"iterator|next|hasNext|plus|minus|times|div|rem|rangeTo|compareTo|"
                          r"component\d+|unaryMinus|unaryPlus|not|inc|dec|\w+Assign|equals|"
                          r"hashCode|toString)$")  # fmt: skip
_ACCESSOR = re.compile(r"^(get|set|is)[A-Z]")
_EITHER = "?either:"
_JVM_NAME = re.compile(r'@(?:get:)?JvmName\("(\w+)"\)')
_EXTENSION = re.compile(r"\bfun\s+(?:<.*?>\s*)?[\w.<>?, ]+?\.\w+\s*\(")  # fun T.name(


@dataclass
class JvmCalls:
    """What the bytecode says: (caller, callee) as (class, method) pairs, and the classes."""

    # (class, method, its first parameter's type, called class, method, its first parameter's)
    calls: set[tuple[str, str, str, str, str, str]] = field(default_factory=set)
    bases: dict[str, list[str]] = field(default_factory=dict)  # class -> superclass, interfaces
    methods: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    files: dict[str, str] = field(default_factory=dict)  # class -> the source file it is from


def read_javap(text: str) -> JvmCalls:
    found = JvmCalls()
    current, method, first, source = "", "", "", ""
    for line in text.splitlines():
        if line.startswith("Compiled from "):
            source = line.split('"')[1]
            continue
        header = _CLASS.match(line)
        if header:
            current = header.group(1)
            bases = [header.group(2)] if header.group(2) else []
            for listed in (header.group(3), header.group(4)):
                bases += [b.split("<")[0].strip() for b in (listed or "").split(",") if b.strip()]
            found.bases[current] = [b for b in bases if b and b != "java.lang.Object"]
            found.files[current] = source
            continue
        signature = _METHOD.match(line)
        if signature and current:
            name = signature.group(1).rsplit(".", 1)[-1]  # a constructor: its class's name
            first = signature.group(2).rsplit(".", 1)[-1]
            method = "<init>" if name == current.rsplit(".", 1)[-1] else name
            found.methods[current].add(method)
            continue
        call = _INVOKE.search(line)
        if call and current:
            owner = (call.group(1) or current.replace(".", "/")).replace("/", ".")
            target_first = call.group(3).rsplit("/", 1)[-1]
            found.calls.add((current, method, first, owner, call.group(2), target_first))
    return found


def scalac_calls(root: Path, beside: Path | None = None) -> JvmCalls:
    """Compile every ``.scala`` under ``root`` (and ``beside``) with Debian's Scala 2.11 and
    read the bytecode."""
    if shutil.which("scalac") is None:
        raise SystemExit("the Scala reference needs Debian's compiler: apt-get install scala")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "classes"
        out.mkdir()
        sources = sorted(str(p) for p in root.rglob("*.scala"))
        sources += sorted(str(p) for p in beside.rglob("*.scala")) if beside else []
        subprocess.run(["scalac", "-nowarn", "-d", str(out), *sources], check=True,
                       capture_output=True, text=True)  # fmt: skip
        text = _javap(out)
    return read_javap(text)


def _javap(out: Path) -> str:
    """Every class under ``out`` disassembled, named by class: given the file
    ``RootPanel.class`` beside ``RootPanel$class.class``, JDK 17's javap prints the latter."""
    classes = sorted(
        str(p.relative_to(out).with_suffix("")).replace("/", ".") for p in out.rglob("*.class")
    )
    return subprocess.run(["javap", "-c", "-p", "-cp", str(out), *classes], check=True,
                          capture_output=True, text=True).stdout  # fmt: skip


def scala_names(owner: str, method: str) -> tuple[str, str] | None:
    """Scala 2.11's class files as the written names: an object ``X$`` is ``X``, a trait's
    implementation class ``X$class`` is ``X``, a closure ``Outer$$anonfun$m$1`` is ``m`` of
    ``Outer``, an anonymous class ``Outer$$anon$1`` is ``Outer``'s; ``m$lzycompute`` is
    ``m``, ``$tilde`` is ``~``, a qualified private ``a$b$C$$m`` is ``m`` and a trait's super
    accessor ``C$$super$m`` is ``super$m``. None for the compiler's own methods."""
    if "$$anonfun$" in owner:
        outer, _, rest = owner.partition("$$anonfun$")
        named = _scala_method(re.sub(r"\$\d+$", "", rest).split("$$")[0]) if rest else None
        return (_scala_class(outer), named if named and not named.isdigit() else "<init>")
    if "$$anon$" in owner:
        return _scala_class(owner.partition("$$anon$")[0]), "<init>"
    named = _scala_method(method)
    return (_scala_class(owner), named) if named else None


_OPERATOR = re.compile(r"^(?!<init>$)[^\w]")  # ``~``, ``+``, ``?``: a symbolic method's name
_SCALA_OPERATORS = {"tilde": "~", "eq": "=", "less": "<", "greater": ">", "bang": "!",
                    "hash": "#", "percent": "%", "up": "^", "amp": "&", "bar": "|",
                    "times": "*", "div": "/", "plus": "+", "minus": "-", "colon": ":",
                    "bslash": "\\", "qmark": "?", "at": "@"}  # fmt: skip


def _scala_method(method: str) -> str | None:
    """A method's name as written; None for a setter, a bridge or another compiler name."""
    method = method.removesuffix("$lzycompute")
    if method == "$init$":
        return "<init>"
    if method.endswith("_$eq") or method.startswith("__super__"):
        return None
    if "$$" in method.lstrip("$"):
        method = method.lstrip("$").rpartition("$$")[2]  # a qualified private's expanded name
        if method.startswith("super$"):
            inner = _scala_method(method.removeprefix("super$"))
            return f"super${inner}" if inner else None
    if method.startswith("$"):
        words = method[1:].split("$")
        if all(word in _SCALA_OPERATORS for word in words):
            return "".join(_SCALA_OPERATORS[word] for word in words)
    return None if "$" in method else method


def _scala_class(name: str) -> str:
    """``a.Outer$inner$`` (an object nested in a class) -> ``a.Outer.inner``."""
    return name.removesuffix("$class").removesuffix("$").replace("$", ".")


def kotlinc_calls(root: Path) -> JvmCalls:
    """Compile every ``.kt`` under ``root`` and read every class file's bytecode."""
    if shutil.which("kotlinc") is None:
        raise SystemExit("the Kotlin reference needs Debian's compiler: apt-get install kotlin")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "classes"
        subprocess.run(["kotlinc", str(root), "-d", str(out), "-module-name", _MODULE],
                       check=True, capture_output=True, text=True)  # fmt: skip
        text = _javap(out)
    return read_javap(text)


def compared_edges(
    states: dict[str, FileState], ours: dict[Edge, int], calls: JvmCalls, language: str = "kotlin"
) -> tuple[set[Edge], dict[Edge, int], dict[str, float]]:
    """Both sides as (caller, callee) full names, as the module's docstring says."""
    full: dict[str, str] = {}  # our symbol id -> package.qualified
    classes: set[str] = set()
    # (source file name, function) -> [(its receiver's type, full name)]
    top_level: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    jvm_named: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)  # as compiled
    inline: set[str] = set()
    variables: set[str] = set()  # and Scala's parameterless defs: read, never called
    variable_ids: set[str] = set()  # ours: a function named as a property stays a call
    aliases = _type_aliases(states)
    for path, state in states.items():
        package = next((s.qualified_name for s in state.symbols
                        if s.kind is SymbolKind.MODULE), "")  # fmt: skip
        module_id = next((s.id for s in state.symbols if s.kind is SymbolKind.MODULE), "")
        for symbol in state.symbols:
            name = f"{package}.{symbol.qualified_name}".lstrip(".")
            full[symbol.id] = name
            if symbol.kind in (SymbolKind.CLASS, SymbolKind.INTERFACE):
                classes.add(name)
            parameterless = (
                language == "scala"
                and symbol.kind is SymbolKind.FUNCTION
                and not (
                    re.search(rf"\b{re.escape(symbol.name)}\s*(\[[^\]]*\]\s*)?\(", symbol.signature)
                )
            )  # ``def peer: JButton``: read as a value, never called with parentheses
            if symbol.kind is SymbolKind.VARIABLE or parameterless:
                variables.add(name)
                variable_ids.add(symbol.id)
            if symbol.kind is SymbolKind.FUNCTION:
                if symbol.parent_id == module_id or _EXTENSION.search(symbol.signature):
                    receiver = symbol.qualified_name.rsplit(".", 2)[-2] if (
                        "." in symbol.qualified_name) else ""  # fmt: skip
                    receiver = aliases.get(receiver, receiver)  # a typealias's type
                    top_level[(Path(path).name, symbol.name)].append((receiver, name))
                    renamed = _JVM_NAME.search(_annotations(path, symbol))
                    if renamed:  # ``@JvmName("get") fun Class<*>.asClassName()``
                        jvm_named[(Path(path).name, renamed.group(1))].append((receiver, name))
                if "inline" in symbol.signature.split("fun", 1)[0].split():
                    inline.add(name)
    known = set(full.values())
    # Scala: code in a method of an anonymous class (``new Listener { def changed() .. }``
    # inside ``def peer``) is its enclosing class's in the bytecode (``Outer$$anon$1``).
    anonymous: dict[str, str] = {}
    local_defs: dict[str, str] = {}  # a def inside a def -> that method
    if language == "scala":
        by_id = {s.id: s for state in states.values() for s in state.symbols}
        for symbol in by_id.values():
            chain, parent = [], by_id.get(symbol.parent_id or "")
            while parent is not None and parent.kind not in (
                SymbolKind.CLASS,
                SymbolKind.INTERFACE,
            ):
                chain.append(parent)
                parent = by_id.get(parent.parent_id or "")
            if chain and parent is not None and symbol.id in full and parent.id in full:
                # A local def (``def applyp`` inside ``def repN``) is its method's code, as
                # the bytecode has it (``applyp$1``, or the closure's around it).
                if _in_anonymous_class(symbol):
                    anonymous[full[symbol.id]] = full[parent.id]
                else:  # called, it is its method's code too: a call of it is no edge
                    anonymous[full[symbol.id]] = local_defs[full[symbol.id]] = full[chain[-1].id]

    def as_class(name: str) -> str:
        owner, _, last = name.rpartition(".")
        if owner in classes and (owner.rsplit(".", 1)[-1] == last or last == "this"):
            return owner  # a constructor (Scala's auxiliary ones are ``def this``)
        if language == "scala" and name in variables and owner in classes:
            return owner  # a parameterless def's code, as the bytecode's accessor
        return name

    def lineage(owner: str) -> Iterator[str]:
        """``owner``, then its bases, breadth first, each once."""
        queue, seen = [owner], set()
        while queue:
            current = queue.pop(0)
            if current not in seen:
                seen.add(current)
                yield current
                queue += calls.bases.get(current, [])

    def declaring(owner: str, method: str) -> str:
        """The class up ``owner``'s lineage that declares ``method``."""
        if language == "scala":  # a mixin's forwarder in a class is no declaration of it
            for current in lineage(owner):
                named = scala_names(current, method)
                if named and f"{named[0]}.{named[1]}" in known:
                    return current
        return next((c for c in lineage(owner) if method in calls.methods.get(c, ())), owner)

    def symbol(owner: str, method: str, caller: bool, first: str = "") -> str | None:
        if language == "scala" and "$$anon$" in owner and "$$anonfun$" not in owner:
            anonymous_class = anonymous_scala(owner, method, caller)
            if anonymous_class != "":
                return anonymous_class
        if language == "scala":
            named = scala_names(owner, method)
            if named is None:
                return None
            if named[1].startswith("super$"):  # a trait's ``super.m()``: its parents' ``m``
                method = named[1].removeprefix("super$")
                for parent in calls.bases.get(owner.removesuffix("$class"), []):
                    found = symbol(declaring(parent, method), method, caller)
                    if found is not None:
                        return found
                return None
            owner, method = named
            if not caller and _OPERATOR.match(method):
                return None  # ``a ~ b``: an operator's call, on neither side (no infix calls)
            if method == "apply" and owner in classes and f"{owner}.apply" not in known:
                return None if caller else owner  # ``Square(2.0)``: a case class's apply
            if method == "<init>":
                return owner if caller or owner in classes else None
            if f"{owner}.{method}" in variables:
                return owner if caller else None  # a val's or a parameterless def's read
            return f"{owner}.{method}" if owner in classes else None
        # An ``internal`` function's default arguments' bridge is ``f$bench$default``.
        method = method.removesuffix("$default").removesuffix(f"${_MODULE}")
        if caller and method.startswith("access$"):
            return None  # a bridge the compiler made: its caller is the call
        method = method.removeprefix("access$")
        renamed = jvm_named.get((calls.files.get(owner, ""), method), [])
        if renamed and "$" not in owner and owner not in classes:  # a file facade's
            chosen = list(dict.fromkeys(n for r, n in renamed if r == first))
            return chosen[0] if len(chosen) == 1 else None
        if not caller and _CONVENTIONS.match(method):
            return None
        parts = [p for p in owner.split("$") if p not in ("Companion", "DefaultImpls")]
        outer = parts[0]
        # A lambda's class: ``Outer$fn$1``: the function written around it.
        for at, part in enumerate(parts[1:], 1):
            if not part[:1].isupper():
                if caller and not part[:1].isdigit():
                    return symbol("$".join(parts[:at]), part, caller)
                return None if not caller else as_class(outer.replace("$", "."))
        cls = ".".join(parts)
        if method in ("<init>", "<clinit>"):
            return cls if caller or cls in classes else None
        if method.startswith("lambda$"):
            return None
        # Kotlin reads a property through ``getX`` (``isX`` for ``val isX``): a method named
        # as a property otherwise (``indent(levels)`` beside ``val indent``) is the function.
        accessor = _ACCESSOR.match(method) and (
            f"{cls}.{method}" not in known or f"{cls}.{method}" in variables
        )
        if accessor or (language == "scala" and f"{cls}.{method}" in variables):
            return cls if caller else None  # a property's accessor: no written call
        if cls not in classes:  # a file's facade (``ShapesKt``): its top-level functions,
            # an extension told apart by its receiver (the first parameter)
            candidates = top_level.get((calls.files.get(owner, ""), method), [])
            chosen = [n for r, n in candidates if r == first] or [n for r, n in candidates if not r]
            if not chosen and len(candidates) == 1:
                chosen = [candidates[0][1]]
            chosen = list(dict.fromkeys(chosen))  # overloads of one receiver share a name
            if len(chosen) != 1 and caller:  # a lambda's overload is unknown: its calls
                return _EITHER + "|".join(n for _, n in candidates)  # are left out of both
            return chosen[0] if len(chosen) == 1 else None
        return f"{cls}.{method}"

    # Scala: an anonymous class (``new Listener { def changed() .. }``) is built where it is
    # written, and its methods are the ones written in it (named as its enclosing class's).
    built_at: dict[str, tuple[str, str, str]] = {}
    for owner, method, first, target_owner, target, _ in sorted(calls.calls):
        if "$$anon$" in target_owner and target == "<init>" and target_owner != owner:
            built_at.setdefault(target_owner, (owner, method, first))

    def anonymous_scala(owner: str, method: str, caller: bool) -> str | None:
        """An anonymous class's code as source symbols; "" where the general rule holds."""
        if not caller and method == "<init>":  # ``new Component { .. }`` builds a Component
            parents = calls.bases.get(owner, [])
            return symbol(parents[0], "<init>", False) if parents else None
        if caller and method == "<init>" and owner in built_at:
            at, where, first = built_at[owner]
            return symbol(at, where, True, first)  # its fields and initializers run there
        if caller and method != "<init>":
            written = f"{_scala_class(owner.partition('$$anon$')[0])}.{method}"
            if written in known:
                return written
        return ""

    reference: set[Edge] = set()
    dropped: set[Edge] = set()  # from overloads a lambda's class cannot tell apart
    for owner, method, first, target_owner, target, target_first in calls.calls:
        if language == "scala" and target_owner.endswith("$class") and target == method:
            continue  # a mixin's forwarder, written by the compiler
        if (
            language == "scala"
            and "$$anon$" in owner
            and method == target == "<init>"
            and target_owner in calls.bases.get(owner, [])[:1]
        ):
            continue  # an anonymous class's call of its parent's constructor: its ``new``
        src = symbol(owner, method, True, first)
        if src is not None and src.startswith(_EITHER):
            dst = symbol(declaring(target_owner, target), target, False, target_first)
            dropped |= {(n, as_class(dst)) for n in src[len(_EITHER) :].split("|") if dst}
            continue
        if method.endswith("$default") and target == method.removesuffix("$default"):
            continue  # a default arguments' bridge calling its function
        declared = declaring(target_owner, target)
        dst = symbol(declared, target, False, target_first)
        if src is not None and dst is not None and dst in known and src in known:
            edge = (as_class(src), as_class(dst))
            if edge[0] != edge[1]:  # a bridge's call (``@JvmStatic``, a constructor's another)
                reference.add(edge)
    reference -= dropped
    ranked: dict[Edge, int] = {}
    named = {(full[s], full[d]): r for (s, d), r in ours.items()
             if s in full and d in full and d not in variable_ids}  # fmt: skip
    through = _through_inline(named, inline)
    for (src, dst), rank in through.items():
        if dst in inline:
            continue
        src, dst = anonymous.get(src, src), local_defs.get(dst, dst)
        edge = (as_class(src), as_class(dst))
        if edge[0] == edge[1] or _CONVENTIONS.match(edge[1].rsplit(".", 1)[-1]):
            continue  # as on the reference's side
        if language == "scala" and _OPERATOR.match(edge[1].rsplit(".", 1)[-1]):
            continue
        if edge in dropped:
            continue
        ranked[edge] = min(rank, ranked.get(edge, rank))
    reference = {edge for edge in reference if edge[1] not in inline}
    figures = {"bytecode calls": float(len(calls.calls)), "inline functions": float(len(inline))}
    return reference, ranked, figures


_TYPE_ALIAS = re.compile(rb"^\s*(?:\w+\s+)*typealias\s+(\w+)\s*(?:<[^=]*>)?\s*=\s*([\w.]+)",
                         re.MULTILINE)  # fmt: skip


def _type_aliases(states: dict[str, FileState]) -> dict[str, str]:
    """``typealias RawOption = OptionWithValues<..>``: RawOption -> OptionWithValues (the
    bytecode names the type)."""
    found = {}
    for path in states:
        source = (_ROOTS.get(path) or Path()).read_bytes() if path in _ROOTS else b""
        for match in _TYPE_ALIAS.finditer(source):
            found[match.group(1).decode()] = match.group(2).decode().rsplit(".", 1)[-1]
    for alias in list(found):  # ``RawOption = NullableOption<..>``, itself an alias
        seen = {alias}
        while found[alias] in found and found[alias] not in seen:
            seen.add(found[alias])
            found[alias] = found[found[alias]]
    return found


_ROOTS: dict[str, Path] = {}  # state path -> the file (``remember_sources``)


def _annotations(path: str, symbol: Symbol) -> str:
    """What is written before a function's ``fun``: its signature's head and, where the
    source is known, the two lines above it (``@JvmName("get")`` on a line of its own)."""
    head = symbol.signature.split("fun", 1)[0]
    source = _ROOTS.get(path)
    if source is None:
        return head
    lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[max(0, symbol.start_line - 3) : symbol.start_line - 1]) + head


def remember_sources(root: Path, pattern: str = "*.kt") -> None:
    for path in root.rglob(pattern):
        _ROOTS[str(path.relative_to(root.parent))] = path


def _in_anonymous_class(symbol: Symbol) -> bool:
    """Whether the brace that opens the body around ``symbol`` is a ``new T { .. }``'s (by
    the source's braces, read backwards from the symbol's line); unknown source: yes."""
    source = _ROOTS.get(symbol.path)
    if source is None:
        return True
    lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
    before = lines[symbol.start_line - 1].split("def ", 1)[0]  # ``new P { def apply ..``
    depth = before.count("}") - before.count("{")
    if depth < 0:
        return "new " in before
    for line in reversed(lines[: symbol.start_line - 1]):
        depth += line.count("}") - line.count("{")
        if depth < 0:
            return "new " in line
    return False


def _through_inline(edges: dict[Edge, int], inline: set[str]) -> dict[Edge, int]:
    """``A -> B -> C`` with ``B`` inline is also ``A -> C`` (the weaker resolution)."""
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for (src, dst), rank in edges.items():
        out[src].append((dst, rank))
    found = dict(edges)
    for (src, dst), rank in edges.items():
        stack, seen = [(dst, rank)], {dst}
        while stack:
            inner, weakest = stack.pop()
            if inner not in inline:
                continue
            for callee, callee_rank in out.get(inner, []):
                both = max(weakest, callee_rank)
                found[(src, callee)] = min(both, found.get((src, callee), both))
                if callee not in seen:
                    seen.add(callee)
                    stack.append((callee, both))
    return found


def kotlinc_version() -> str:
    done = subprocess.run(["kotlinc", "-version"], capture_output=True, text=True)
    lines = [line for line in (done.stderr + done.stdout).splitlines() if "kotlinc" in line]
    return lines[0].removeprefix("info: ").strip() if lines else "unknown"
