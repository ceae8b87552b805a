"""Name resolution inside one file: scopes, members, bases and receiver types.

The extractor inherits it. A written name (``helper``, ``self.adapter.send``,
``super().send``) becomes a definition of this file when the file can tell, or a
``Reference`` for the graph to join across files by its candidate keys.
"""

from __future__ import annotations

from collections import defaultdict

import tree_sitter as ts

from patchstream.parsing.c_language import c_parameters
from patchstream.parsing.kotlin_types import aliased_types
from patchstream.parsing.modules import C_GLOBAL, ImportBinding, rust_absolute
from patchstream.parsing.node_text import class_like, python_parameters
from patchstream.parsing.receiver_calls import BuiltReceivers
from patchstream.parsing.receiver_types import (
    SELF_WORDS,
    _Def,
    _Typed,
    is_self,
)
from patchstream.parsing.source import Source
from patchstream.schemas.graph import CallResolution, Reference

# Where a constructor call's type is a guess (the name may be rebound to anything later);
# in the statically typed languages ``x := T{}`` / ``new Foo()`` fixes the type.
_GUESSED_FROM_CALLS = frozenset({"python", "javascript"})


_GO_PREDECLARED = frozenset({
    "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make", "max",
    "min", "new", "panic", "print", "println", "real", "recover", "bool", "byte", "complex64",
    "complex128", "error", "float32", "float64", "int", "int8", "int16", "int32", "int64", "rune",
    "string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "any", "comparable",
    "iota", "nil", "true", "false",
})  # fmt: skip


_NO_BARE_MEMBERS = frozenset({"python", "javascript", "typescript", "tsx", "rust"})

# java.lang's classes that code names without an import (the ones a call is made on).
_JAVA_LANG = frozenset({
    "Boolean", "Byte", "Character", "Class", "ClassLoader", "Double", "Enum", "Float",
    "Integer", "Long", "Math", "Number", "Object", "Runtime", "Short", "StrictMath", "String",
    "StringBuilder", "StringBuffer", "System", "Thread", "ThreadLocal", "Throwable",
    "Exception", "RuntimeException", "Error", "Iterable", "Comparable", "Runnable", "Record",
    "CharSequence", "AutoCloseable", "Void", "Process", "ProcessBuilder", "StackWalker",
})  # fmt: skip


class Resolution(BuiltReceivers):
    """Lookups over the definitions, imports and type facts the extractor collected."""

    language: str
    tree: ts.Tree
    src: Source
    by_qualified: dict[str, _Def]
    bindings: dict[str, ImportBinding]
    scoped_bindings: dict[tuple[str, str], ImportBinding]  # (function, name): its own imports
    def_by_name_node: dict[tuple[int, int], _Def]
    file_scope: str  # C#'s ``namespace ns;`` ("" elsewhere)
    opened: tuple[str, ...]  # C#'s ``using``, Kotlin's and Scala's wildcard imports

    def _init_resolution(self) -> None:
        self._local_bases: dict[str, list[str]] = defaultdict(list)
        # Every base as resolved (local or imported), in declaration order: super() and
        # inherited members walk it.
        self._bases: dict[str, list[_Def | Reference]] = defaultdict(list)
        # Kotlin's ``super.m()`` may name an interface's default method: every supertype.
        self._supertypes: dict[str, list[_Def | Reference]] = defaultdict(list)
        # Kotlin's member extensions by name, each with its receiver type as written.
        self._member_extensions: dict[str, list[tuple[_Def, str]]] = defaultdict(list)
        # Receiver types: scope qualified name ("" for the module) -> name -> type;
        # class qualified name -> attribute -> type; function -> returned type.
        self._var_types: dict[str, dict[str, _Typed]] = defaultdict(dict)
        self._attr_types: dict[str, dict[str, _Typed]] = defaultdict(dict)
        self._returns: dict[str, tuple[str, ...]] = {}
        self._element_returns: dict[str, tuple[str, ...]] = {}  # -> list[T] and the like
        # Qualified name of an alias (``scope.name``) -> what it names (None: ambiguous).
        self._aliases: dict[str, tuple[str, ...] | None] = {}
        self.type_aliases: dict[str, str] = {}  # Kotlin's ``typealias A = B``: A -> B
        # Kotlin: a name imported from several packages (extensions of different receivers,
        # ``arguments.convert`` and ``options.convert``), each binding in import order.
        self.rebound: dict[str, list[ImportBinding]] = defaultdict(list)
        self._alias_depth = 0
        self._parameters_of: dict[int, list[str]] = {}  # a function's node id -> parameters
        self._typing = False
        # Set while resolving one call when a type on its way came from a constructor call.
        self._guessed = False
        self._inferred = False
        self._block_types: list[tuple[int, int, str, _Typed]] = []
        self._built: dict[tuple[int, int, str], tuple[_Def | Reference | None, bool, bool]] = {}
        self._chain_depth = 0
        self._at = -1
        self._arity: int | None = None  # the call's argument count, where it is known
        self._overloads: dict[str, list[_Def]] = defaultdict(list)  # Java: qualified -> each
        self._building = False  # resolving what a ``new`` builds (a type, never a member)

    def _certainty(self) -> CallResolution:
        """The resolution of the call just resolved (``_guessed`` is reset before each)."""
        guessed = self._guessed and self.language in _GUESSED_FROM_CALLS
        return CallResolution.INFERRED if guessed or self._inferred else CallResolution.EXACT

    def _enclosing_def(self, node: ts.Node) -> _Def | None:
        raise NotImplementedError

    def _scopes(self, around: _Def | None) -> list[str]:
        """Qualified-name prefixes to try for a bare name, innermost first, module last."""
        prefixes: list[str] = []
        current = around
        while current is not None:
            # Only Java (and Go, whose methods are not nested) name a class's members by a
            # bare name; elsewhere ``m()`` inside a method (or an object literal's method)
            # is never ``this.m()``/``self.m()``/``Self::m()``.
            member_scope = self.language not in _NO_BARE_MEMBERS or current.kind == "function"
            # Rust's inline ``mod tests { .. }`` is a namespace: its functions call each other
            # by bare name.
            member_scope = member_scope or (self.language == "rust" and current.kind == "module")
            if member_scope:
                prefixes.append(current.qualified_name)
                if current.receiver is not None and self.language in ("cpp", "kotlin"):
                    prefixes.append(current.receiver)  # ``Foo::Run``'s body sees Foo's members
                    prefixes += aliased_types(current.receiver, self.type_aliases)  # Kotlin's
            current = current.parent
        if self.file_scope:  # C#'s ``namespace ns;``
            prefixes.append(self.file_scope)
        prefixes.append("")
        return prefixes

    def _enclosing_class(self, around: _Def | None) -> str | None:
        current = around
        while current is not None:
            if current.receiver is not None:
                return current.receiver
            if current.kind in ("class", "interface", "impl"):
                return current.qualified_name
            if self._rebinds_self(current):
                return None  # a nested ``def f(self)``: its own ``self``, of an unknown class
            current = current.parent
        return None

    def _outer_class(self, name: str, around: _Def | None) -> str | None:
        """The class around ``around`` named ``name`` (``Outer.this``), innermost first."""
        current = around
        while current is not None:
            if current.kind in ("class", "interface") and current.name == name:
                return current.qualified_name
            current = current.parent
        return None

    def _rebinds_self(self, function: _Def) -> bool:
        """A Python function outside a class body whose first parameter is ``self``/``cls``
        (a method built in a closure and attached elsewhere): ``self`` is not the class
        around it."""
        if self.language != "python" or function.kind != "function":
            return False
        if function.parent is None or function.parent.kind != "function":
            return False
        parameters = function.node.child_by_field_name("parameters")
        first = parameters.named_children[0] if parameters and parameters.named_children else None
        return first is not None and self.src.text(first) in ("self", "cls")

    def _a_parameter(self, name: str, around: _Def | None) -> bool:
        """Whether ``name`` is a parameter of the Python function (or lambda) the call is in,
        or of one around it: ``def run(g): g()`` calls what is passed, not the module's ``g``."""
        if self.language not in ("python", "c", "cpp") or name in SELF_WORDS:
            return False
        read = python_parameters if self.language == "python" else c_parameters
        while around is not None and around.kind == "function":
            key = around.node.id
            names = self._parameters_of.get(key)
            if names is None:
                names = self._parameters_of[key] = read(around.node, self.src.text)
            if name in names:
                return True
            around = around.parent
        return False

    def _resolve(self, parts: list[str], around: _Def | None) -> _Def | Reference:
        """A local definition for the written name, or a reference to resolve elsewhere."""
        if "?" in parts[:-1] or not parts or parts[-1] == "?":
            last = parts[-1] if parts and parts[-1] != "?" else "?"
            return Reference(name=last)
        if parts == ["cls"] and (owner := self._enclosing_class(around)) is not None:
            found = self.by_qualified.get(owner)
            if found is not None:
                return found  # cls(): the class itself
        if len(parts) == 3 and parts[1] == "this" and self.language in ("java", "scala"):
            outer = self._outer_class(parts[0], around)  # ``Component.this.paint(g)``
            member = self._member(outer, parts[2]) if outer is not None else None
            if member is not None:
                return member
        if is_self(parts[0], self.language) and len(parts) == 2:
            owner = self._enclosing_class(around)
            if owner is not None:
                member = self._member(owner, parts[1])
                if member is not None:
                    return member
            elif not self._typing:  # TypeScript's ``function (this: T) { this.m() }``
                typed = self._typed_member(parts, around)
                if typed is not None:
                    return typed
            return Reference(name=".".join(parts))
        if len(parts) >= 2 and not self._typing and not self._path_written:
            guessed = self._guessed
            typed = self._typed_member(parts, around)
            if typed is not None:
                return typed
            self._guessed = guessed  # no type helped: what follows is a name binding
        dotted = ".".join(parts)
        if len(parts) == 1 and self._a_parameter(dotted, around):
            return Reference(name=dotted)  # whatever callers pass: value flow's part
        if len(parts) == 1:
            nearest: _Def | None = None
            for prefix in self._scopes(around):
                key = f"{prefix}.{dotted}" if prefix else dotted
                named = self._via_alias(key, around)
                if named is not None:
                    return named
                fitting = self._fitting(key)
                if fitting is not None and self._a_type_wanted() and fitting[0].kind == "variable":
                    continue  # C#'s ``USHeap USHeap { get; }``: the type, not the property
                if fitting is not None and fitting[1]:
                    return fitting[0]
                nearest = nearest or (fitting[0] if fitting else None)
            if nearest is not None:
                return nearest
            # C# names its methods like its classes: any bare name called may be an
            # inherited one (a bare name built is a type).
            java_member = (self.language == "csharp" and not self._a_type_wanted()) or (
                self.language in ("java", "kotlin", "scala") and not class_like(dotted)
            )
            if java_member and self._binding(dotted, around) is None:  # not a static import
                inherited = self._inherited_method(dotted, around)
                if inherited is not None:
                    return inherited
        else:
            local = self.by_qualified.get(dotted)
            if local is not None:
                return local
            nested = (
                self._nested(parts, around)
                if self.language in ("java", "csharp", "kotlin", "scala")
                else None
            )
            if nested is not None:  # ``TagName.valueOf()`` for the nested ``Outer.TagName``
                return nested
            container = self.by_qualified.get(".".join(parts[:-1]))
            if container is not None and container.kind in ("class", "interface"):
                member = self._member(container.qualified_name, parts[-1])  # Base.__init__(self)
                if member is not None:
                    return member
        for cut in range(len(parts), 0, -1):
            binding = self._binding(".".join(parts[:cut]), around)
            if binding is None:
                continue
            rest = ".".join(parts[cut:])
            if binding.name:
                name = f"{binding.name}.{rest}" if rest else binding.name
            else:
                name = rest
            called = self.language == "kotlin" and not self._typing and not self._building
            owner = self._enclosing_class(around) if called and not class_like(dotted) else None
            if owner is not None and len(parts) == 1 and binding.name not in ("", "*"):
                # Kotlin: an imported function called bare inside a class or an extension
                # may be an extension of it (``convert {}`` in ``RawArgument.long``): its
                # key is ``RawArgument.convert``; the graph also tries plain ``convert``.
                name = f"{owner.rsplit('.', 1)[-1]}.{name}"
                binding = self._receivers_binding(dotted, owner, around) or binding
            return Reference(name=name, module=binding.module)
        if self.language == "php":
            # PHP: ``\ns\Foo`` from the root; any other name no ``use`` binds is the
            # namespace's (a bare function's falls back to the root's: ``keys``).
            if parts[0] == "global":
                return Reference(name=".".join(parts[1:]), module="")
            return Reference(name=dotted, module=self.module)
        # Kotlin's and Scala's package, then what the file's wildcard imports bring.
        package = self._package_modules()
        if self.language == "scala" and (len(parts) == 1 or class_like(parts[0])):
            return Reference(name=dotted, module=package)  # the package's, as Kotlin's
        if self.language == "kotlin" and (len(parts) == 1 or class_like(parts[0])):
            # Kotlin: a function, class or object no import names is the package's (its
            # other files need no import); the standard library's stay unresolved there.
            # A bare call in a class or an extension function may be an extension of that
            # type beside it (``transformAll {}`` in ``ProcessedArgument.default``): wanted
            # as ``ProcessedArgument.transformAll``, and as plain ``transformAll`` too
            # (``keys.reference_keys``).
            owner = self._enclosing_class(around)
            bare_call = len(parts) == 1 and not class_like(dotted) and not self._typing
            if owner is not None and bare_call and not self._building:
                return self._member_of_owner(owner, dotted, around, package)
            return Reference(name=dotted, module=package)
        if self.language == "go" and len(parts) == 1 and dotted not in _GO_PREDECLARED:
            # Go: a name no definition of this file or import binds is one of the package's
            # other files (same directory); no import is written for those.
            return Reference(name=dotted, module=self.module)
        if self.language == "rust" and parts[0] in ("crate", "super") and len(parts) > 1:
            # ``crate::hybrid::dfa::DFA``: a path from the crate's root (or the parent module);
            # the graph's keys split it into module and name at every point. (``self`` is the
            # receiver here far more often than ``self::``.)
            path = rust_absolute(parts[:-1], self.module) if parts[0] != "crate" else parts[:-1]
            return Reference(name=parts[-1], module="::".join(path))
        if self.language == "c" and len(parts) == 1:  # the program's namespace, any file's
            return Reference(name=dotted, module=C_GLOBAL)
        if self.language == "java" and class_like(parts[0]) and parts[0] not in _JAVA_LANG:
            # Java: a class no import names is one of the package's (no import is written
            # for those), unless it is one of java.lang's.
            return Reference(name=dotted, module=self.module)
        if self.language in ("java", "kotlin", "scala") and not class_like(parts[0]):
            # A fully qualified name (``org.jsoup.nodes.Document``): the package, then the
            # class and what follows.
            first = next((i for i, part in enumerate(parts) if class_like(part)), None)
            if first:
                return Reference(name=".".join(parts[first:]), module=".".join(parts[:first]))
        return Reference(name=dotted)

    def _package_modules(self) -> str:
        """Kotlin's and Scala's lookup modules: the file's package, then each package its
        wildcard imports open (``keys.reference_keys`` splits them at ``+``)."""
        return self.module + "".join(f"+{opened}" for opened in self.opened)

    def _member_of_owner(
        self, owner: str, name: str, around: _Def | None, package: str
    ) -> Reference:
        """Kotlin: ``name`` of the class or extension receiver ``owner`` that no definition
        here holds. A receiver written with its outer class (``FunSpec.Builder``) keeps it,
        looked up where its head is imported from; a plain one is the package's."""
        head, dot, rest = owner.partition(".")
        if not dot or not class_like(head):
            return Reference(name=f"{owner.rsplit('.', 1)[-1]}.{name}", module=package)
        binding = self._binding(head, around)
        if binding is not None and binding.name not in ("", "*"):
            return Reference(name=f"{binding.name}.{rest}.{name}", module=binding.module)
        return Reference(name=f"{owner}.{name}", module=package)

    def _a_type_wanted(self) -> bool:
        """A C# name read as a type (what ``new`` builds, a declared type), where a
        property may have the type's name."""
        return self.language == "csharp" and (self._building or self._typing)

    def _nested(self, parts: list[str], around: _Def | None) -> _Def | Reference | None:
        """``A.m`` / ``A.B`` where ``A`` is a class nested in one around (Java names it without
        its outer class)."""
        for prefix in self._scopes(around)[:-1]:
            head = self.by_qualified.get(f"{prefix}.{parts[0]}")
            if head is None or head.kind not in ("class", "interface"):
                continue
            found = self.by_qualified.get(".".join([head.qualified_name, *parts[1:]]))
            if found is not None:
                return found
            if len(parts) == 2:
                return self._member(head.qualified_name, parts[1])
        return None

    def _delegated_constructor(self, word: str, around: _Def | None) -> _Def | Reference | None:
        """Java's ``this(...)`` (the class around) and ``super(...)`` (its base class, the
        first one declared): constructors count as their class."""
        owner = self._enclosing_class(around)
        if owner is None:
            return None
        if word == "this":
            return self.by_qualified.get(owner)
        bases = self._bases.get(owner, [])
        return bases[0] if bases else None

    def _inherited_method(self, name: str, around: _Def | None) -> _Def | Reference | None:
        """Java's ``m()`` inside a class: ``this.m()``, which a base of this file or another
        may define (the graph walks further up from the first imported base)."""
        owner = self._enclosing_class(around)
        return self._member(owner, name) if owner is not None else None

    def _binding(self, name: str, around: _Def | None) -> ImportBinding | None:
        """What an import binds ``name`` to, innermost function first, then the module."""
        scope = around
        while scope is not None and self.scoped_bindings:
            found = self.scoped_bindings.get((scope.qualified_name, name))
            if found is not None:
                return found
            scope = scope.parent
        return self.bindings.get(name)

    def _receivers_binding(
        self, name: str, owner: str, around: _Def | None
    ) -> ImportBinding | None:
        """Of a name imported from several packages, the one imported from where the
        receiver type is (``convert`` in ``fun RawArgument.int()``: ``arguments``'s, as
        ``RawArgument``); None when it is imported once or no package matches."""
        imported = self.rebound.get(name)
        owned = self._binding(owner.split(".", 1)[0], around)
        if not imported or owned is None:
            return None
        return next((b for b in imported if b.module == owned.module), None)

    def _via_alias(self, key: str, around: _Def | None) -> _Def | Reference | None:
        """What the alias ``key`` names, when that is a function, a class or an import."""
        named = self._aliases.get(key)
        if named is None or self._alias_depth > 3:
            return None
        self._alias_depth += 1
        try:
            target = self._resolve(list(named), around)
        finally:
            self._alias_depth -= 1
        if isinstance(target, _Def):
            return target if target.kind in ("function", "class") else None
        return target if target.module is not None else None

    def _lookup_member(self, owner: str, member: str) -> _Def | None:
        """``owner.member`` in this file, searching local base classes breadth first (in Java,
        the nearest whose parameters take the call's arguments, else the nearest)."""
        nearest = None
        for current in self._local_lineage(owner):
            found = self._fitting(f"{current}.{member}")
            if found is not None and found[1]:
                return found[0]
            nearest = nearest or (found[0] if found else None)
        return nearest

    def _fitting(self, qualified: str) -> tuple[_Def, bool] | None:
        """The definition named ``qualified`` and whether it takes the call's arguments: with
        Java overloads, the first that does (``reset(sb)`` is not ``reset()``)."""
        found = self.by_qualified.get(qualified)
        if found is None or self.language not in ("java", "csharp") or self._arity is None:
            return (found, True) if found is not None else None
        for overload in self._overloads.get(qualified, ()):
            if takes(overload, self._arity):
                return overload, True
        return found, found.kind != "function"

    # -- receivers ---------------------------------------------------------------------------

    def _member(self, owner: str, member: str) -> _Def | Reference | None:
        """``owner.member`` here, or through the first imported base that may define it."""
        local = self._lookup_member(owner, member)
        if local is not None and local.kind == "variable":
            named = self._via_alias(local.qualified_name, local.parent)
            return named if named is not None else local
        if local is not None:
            return local
        queue, seen = [owner], set()
        while queue:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            for base in self._bases.get(current, ()):
                if isinstance(base, _Def):
                    queue.append(base.qualified_name)
                elif base.module is not None:
                    return Reference(name=f"{base.name}.{member}", module=base.module)
        return None

    def _super_member(self, method: str, around: _Def | None) -> _Def | Reference:
        """``super().m()``: ``m`` in the bases of the enclosing class, in order."""
        owner = self._enclosing_class(around) or ""
        bases = self._supertypes if self.language == "kotlin" else self._bases
        for base in bases.get(owner, ()):
            if isinstance(base, _Def):
                found = self._member(base.qualified_name, method)
                if found is not None:
                    return found
            elif base.module is not None:
                return Reference(name=f"{base.name}.{method}", module=base.module)
        return Reference(name=method)


def takes(function: _Def, count: int) -> bool:
    """Whether a Java or C# method's parameters take ``count`` arguments (varargs and
    ``params`` take more; C#'s parameters with a default value may be left out)."""
    listed = function.node.child_by_field_name("parameters")
    if listed is None:
        return count == 0
    if listed.type == "parameter_list":  # C#
        each = [p for p in listed.named_children if p.type == "parameter"]
        # A parameter's default value is its last child; a required one ends with its name.
        required = sum(1 for p in each if p.child_by_field_name("name") == p.named_children[-1])
        spread = listed.child_by_field_name("name") is not None  # ``params T[] rest``
        return required <= count and (spread or count <= len(each))
    fixed = [p for p in listed.named_children if p.type == "formal_parameter"]
    varargs = any(p.type == "spread_parameter" for p in listed.named_children)
    return count == len(fixed) or (varargs and count >= len(fixed))
