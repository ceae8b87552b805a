"""Keys that let a reference find its target symbol in another file, in any arrival order.

A symbol is findable under ``scope|module|qualified_name`` (its *resolution key*); a
reference wants one or more candidate keys computed from how it was written. Both sides are
plain strings, so the graph joins them with an index lookup when either end arrives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from patchstream.parsing.cpp_language import is_scoped_lookup, lookup_keys
from patchstream.parsing.csharp_language import extended_type, extension_key
from patchstream.parsing.kotlin_types import supertypes
from patchstream.parsing.modules import C_GLOBAL, CS_GLOBAL, RB_GLOBAL, SW_GLOBAL
from patchstream.schemas.events import view_ref
from patchstream.schemas.graph import Reference, Symbol, SymbolKind

_MAX_PARTS = 8
GLOBAL_NAMESPACE_LANGUAGES = frozenset({"c", "cpp"})


def scope_of(tenant: str, repo: str, ref: str, workspace: str | None = None) -> str:
    """Names one branch (or workspace overlay) of one repository of one tenant."""
    return f"{tenant}|{repo}|{view_ref(ref, workspace)}"


def symbol_key(scope: str, module: str, symbol: Symbol) -> str | None:
    """The key other files' references use to find ``symbol`` (None for File nodes)."""
    if symbol.kind is SymbolKind.FILE:
        return None
    if symbol.kind is SymbolKind.MODULE:
        return f"{scope}|{module}|"
    if symbol.language in GLOBAL_NAMESPACE_LANGUAGES and not file_local(symbol):
        return f"{scope}|{C_GLOBAL}|{symbol.qualified_name}"  # C: one namespace, the program's
    if symbol.language == "csharp":  # full names: namespaces are not files
        extended = extended_type(symbol)
        if extended is not None:
            return extension_key(scope, symbol, extended)
        return f"{scope}|{CS_GLOBAL}|{symbol.qualified_name}"
    if symbol.language == "ruby":  # a constant's full name; a method's, its owner's and own
        return f"{scope}|{RB_GLOBAL}|{symbol.qualified_name}"
    if symbol.language == "swift":  # a type's (nested ones too) and its members'
        return f"{scope}|{SW_GLOBAL}|{symbol.qualified_name}"
    return f"{scope}|{module}|{symbol.qualified_name}"


def owner_key(scope: str, symbol: Symbol, module_id: str) -> str | None:
    """The key of the class a C++ method belongs to when no DEFINES edge can say so: defined
    outside its class (``VersionSet::LogAndApply``) in a file without the class; or a Swift
    method of an extension in a file without its type (``extension NameSpecification {
    func generateHelpNames() }``)."""
    if symbol.language not in ("cpp", "swift") or symbol.kind is not SymbolKind.FUNCTION:
        return None
    owner = symbol.qualified_name.rpartition(".")[0]
    if not owner or symbol.parent_id != module_id or file_local(symbol):
        return None
    return f"{scope}|{C_GLOBAL if symbol.language == 'cpp' else SW_GLOBAL}|{owner}"


def file_local(symbol: Symbol) -> bool:
    """A C ``static`` definition of a ``.c`` file: no other file can name it, so other
    files' calls of the name must not find it (every ``.c`` of a project may have its own
    ``static int init(...)``). Projects spell it through macros too (``MEM_STATIC``,
    ``FORCE_INLINE_TEMPLATE``, ``LZ4_FORCE_INLINE``: ``static inline`` by convention, and an
    inline definition of a ``.c`` file is its own). A header's ``static inline`` is every
    includer's: global."""
    if not symbol.path.endswith(_SOURCE_FILES) or not symbol.signature:
        return False
    words = symbol.signature.split("(", 1)[0].split()
    return "static" in words or any(_STATIC_MACRO.fullmatch(word) for word in words)


_SOURCE_FILES = (".c", ".cc", ".cpp", ".cxx", ".c++")  # not headers
_STATIC_MACRO = re.compile(r"[A-Z0-9_]*(?:STATIC|INLINE)[A-Z0-9_]*")


def shadowed(symbols: Iterable[Symbol], language: str | None) -> set[str]:
    """Ids of definitions a later one of the same name replaces, which references from other
    files must not find: in Python the last definition of a name is the one that runs
    (typing overloads first, the implementation last). Later duplicates get larger ``#n``.
    Definitions in different branches of an ``if``/``try`` (``alternative``) all stay."""
    if language != "python":
        return set()
    last: dict[str, Symbol] = {}
    hidden: set[str] = set()
    for symbol in symbols:
        if symbol.kind in (SymbolKind.FILE, SymbolKind.MODULE):
            continue
        earlier = last.get(symbol.qualified_name)
        if earlier is None:
            last[symbol.qualified_name] = symbol
        elif _order(symbol.id) > _order(earlier.id):
            if not earlier.alternative:
                hidden.add(earlier.id)
            last[symbol.qualified_name] = symbol
        elif not symbol.alternative:
            hidden.add(symbol.id)
    return hidden


def _order(symbol_id: str) -> int:
    """1 for ``...::name``, n for ``...::name#n``."""
    _, mark, number = symbol_id.rpartition("#")
    return int(number) if mark and number.isdigit() else 1


def _module_separator(language: str | None) -> str:
    if language == "rust":
        return "::"
    if language in ("javascript", "typescript", "tsx", "go"):
        return "/"
    return "."


def reference_keys(scope: str, reference: Reference, language: str | None) -> list[str]:
    """Candidate keys for a reference, most specific first; ``~dst`` if it cannot resolve.

    The full written path (module plus name) is split at every point into a module part and
    a qualified-name part, so ``pkg.util`` + ``helper`` also finds a ``helper`` defined in
    module ``pkg.util`` when it was imported as ``from pkg import util; util.helper()``.
    Go import paths match the module (a directory) by suffix.
    """
    if reference.module is None or reference.name in ("*", "default"):
        return [f"{scope}|~{reference.as_dst()}"]
    if language in ("cpp", "csharp", "ruby", "swift") and is_scoped_lookup(reference):
        return lookup_keys(scope, reference)
    if language in ("kotlin", "scala") and "+" in reference.module:
        # The file's package, then each package its wildcard imports open.
        each = [Reference(name=reference.name, module=m) for m in reference.module.split("+") if m]
        return list(dict.fromkeys(k for ref in each for k in reference_keys(scope, ref, language)))
    sep = _module_separator(language)
    module_parts = [p for p in reference.module.split(sep) if p][-_MAX_PARTS:]
    name_parts = [p for p in reference.name.split(".") if p][:_MAX_PARTS]
    keys: list[str] = []
    if sep == "/":
        # Path-like modules: the name never moves into the path, but Go matches by suffix.
        suffixes = (
            [sep.join(module_parts[i:]) for i in range(len(module_parts))]
            if language == "go"
            else [reference.module]
        )
        keys = [f"{scope}|{module}|{'.'.join(name_parts)}" for module in suffixes]
    else:
        parts = module_parts + name_parts
        for cut in range(len(parts), 0, -1):
            module = sep.join(parts[:cut])
            qualified = ".".join(parts[cut:])
            keys.append(f"{scope}|{module}|{qualified}")
        if language == "php" and (not module_parts or len(name_parts) == 1):
            # PHP: the root namespace's (``\\Foo``), and a bare function's fallback there.
            keys.append(f"{scope}||{'.'.join(name_parts)}")
        if language == "kotlin" and len(name_parts) >= 2:
            # ``Receiver.f``: an extension of the receiver's library supertypes
            # (``MutableList.f`` runs ``Collection.f``); of an import, also a plain function.
            for supertype in supertypes(name_parts[-2]) if len(name_parts) == 2 else ():
                keys.append(f"{scope}|{reference.module}|{supertype}.{name_parts[-1]}")
            keys.append(f"{scope}|{reference.module}|{name_parts[-1]}")
    return list(dict.fromkeys(keys))
