"""C++'s own rules for extraction, beside C's (``c_language``).

Names live in namespaces and classes, and a name is looked up from where it is written
outward: ``Get()`` inside ``leveldb::DBImpl::Write`` is ``leveldb::DBImpl::Get``, else
``leveldb::Get``, else ``::Get``; ``Env::Default()`` there is ``leveldb::Env::Default`` or
``::Env::Default``. Qualified names say all of it (``leveldb.DBImpl.Get``: a namespace is a
naming scope, as a Rust ``impl`` is), and a name no definition of the file binds becomes a
reference whose module carries the scope it was written in: ``<global>.leveldb.DBImpl``.
``keys.reference_keys`` turns that into one candidate key per enclosing scope, innermost
first; the graph joins every one that some file defines.
"""

from __future__ import annotations

import re
from typing import Protocol

from patchstream.parsing.csharp_language import member_keys
from patchstream.parsing.modules import C_GLOBAL, CS_GLOBAL, RB_GLOBAL, SW_GLOBAL
from patchstream.parsing.source import blank_spans
from patchstream.parsing.swift_library import conformances
from patchstream.schemas.graph import Reference

# ``class LEVELDB_EXPORT Status {``, ``struct YAML_CPP_API Mark :``: a macro the grammar
# cannot expand between the keyword and the name (it read ``LEVELDB_EXPORT`` as the name and
# lost the class).
_EXPORT_MACRO = re.compile(
    rb"\b(?:class|struct)[ \t]{1,40}([A-Z][A-Z0-9_]{2,100})[ \t]{1,40}"
    rb"(?=[A-Za-z_]\w{0,200}[ \t]{0,40}(?:final[ \t]{0,40})?[:{])"
)
# Clang's thread-safety annotations and their kind (``GUARDED_BY(mu_)``,
# ``EXCLUSIVE_LOCKS_REQUIRED(mu_)``, ``ABSL_LOCKS_EXCLUDED(mu_)``): a macro the grammar cannot
# expand after a field's or a function's declarator, where it read the macro as the
# declarator and lost the field (``VersionSet* const versions_ GUARDED_BY(mutex_);``) or the
# method. An upper-case name with an underscore and one bounded argument list, after a name
# or a ``)`` and before what ends a declaration. Every part is bounded to its line.
_ANNOTATION_MACRO = re.compile(
    rb"([A-Za-z_]\w{0,200}|\))[ \t]{1,400}([A-Z][A-Z0-9]{0,60}_[A-Z0-9_]{1,60}"
    rb"\([^()\n;{}]{0,200}\))(?=[ \t]{0,40}(?:[;={,]|[A-Z][A-Z0-9]{0,60}_[A-Z0-9_]{1,60}\(|"
    rb"const\b|override\b|final\b|noexcept\b))"
)
# Words after which a macro call is an expression, never an annotation.
_NOT_DECLARATORS = frozenset(
    {b"return", b"throw", b"case", b"else", b"do", b"new", b"delete", b"co_return",
     b"co_yield", b"goto", b"sizeof", b"typedef", b"using", b"operator", b"define"}
)  # fmt: skip
# Libraries, never the project's: C++'s, and .NET's (C#).
_UNRESOLVED_SCOPES = frozenset({"std", "boost", "absl", "System", "Microsoft"})
_SELF = frozenset({"this", "(*this)", "self"})
# Names looked up from where they are written: C++'s, C#'s, Ruby's constants and Swift's.
SCOPED_LANGUAGES = frozenset({"cpp", "csharp", "ruby", "swift"})


class _Scoped(Protocol):
    kind: str
    qualified_name: str


def without_export_macros(source: bytes) -> bytes:
    """``source`` with each export macro after ``class``/``struct``, and each annotation
    macro after a declarator (``GUARDED_BY(mu_)``), blanked to spaces of its length: what
    the parser reads. Offsets are unchanged, so every node's text is still read from the
    file as written."""
    blanked = source
    if b"class" in source or b"struct" in source:
        blanked = blank_spans(blanked, [m.span(1) for m in _EXPORT_MACRO.finditer(blanked)])
    for _ in range(3):  # ``Run() LOCKS_EXCLUDED(a) ABSL_ACQUIRED_AFTER(b);``: one a pass
        if b"_" not in blanked:
            break
        spans = [found.span(2) for found in _ANNOTATION_MACRO.finditer(blanked)
                 if found.group(1) not in _NOT_DECLARATORS]  # fmt: skip
        if not spans:
            break
        blanked = blank_spans(blanked, spans)
    return blanked


def using_aliases(declared: list[str]) -> dict[str, str]:
    """``using leveldb::Status;`` -> ``{"Status": "leveldb.Status"}`` (``std::`` left out:
    the library's names are never the project's)."""
    found = {}
    for written in declared:
        dotted = ".".join(p for p in written.replace("::", ".").split(".") if p.strip())
        if "." in dotted and dotted.split(".", 1)[0] not in _UNRESOLVED_SCOPES:
            found[dotted.rsplit(".", 1)[1]] = dotted
    return found


def call_context(around: _Scoped | None) -> str:
    """The namespaces and class a C++ call is written in (``leveldb.DBImpl``): a function's
    qualified name without its own, a class's whole."""
    if around is None:
        return ""
    if around.kind == "function":
        return around.qualified_name.rpartition(".")[0]
    return around.qualified_name


def scoped_lookup(
    target: object,
    context: str,
    aliases: dict[str, str] | None = None,
    marker: str = C_GLOBAL,
    opened: tuple[str, ...] = (),
    arity: int | None = None,
) -> object:
    """``target`` as C++ (and C#) look it up when it is a reference with no module: from
    ``context`` (the namespaces and class the call is written in, dotted) outward.
    ``aliases``: the file's ``using ns::Name;`` declarations (``Name`` -> ``ns.Name``).
    ``marker``: the language's program-wide namespace; ``opened``: namespaces the file
    opens (C#'s ``using Acme.Util;``), tried after the enclosing scopes; ``arity``: a C#
    member call's argument count, for its extension methods (``csharp_language``)."""
    if not isinstance(target, Reference) or target.module is not None:
        return target
    parts = [part for part in target.name.split(".") if part]
    if parts and parts[0] in _SELF:  # ``this->m()``: the class's member, then outward
        # (C#: named by its class, whose extension methods ``this.M()`` may also run)
        owner = context.rsplit(".", 1)[-1] if marker == CS_GLOBAL and context else ""
        parts = [owner, *parts[1:]] if owner and len(parts) > 1 else parts[1:]
    if parts and parts[0] == "global":  # C#'s ``global::Acme.Util``: from the top only
        parts, context, opened = parts[1:], "", ()
    if parts and aliases and parts[0] in aliases:
        parts = [*aliases[parts[0]].split("."), *parts[1:]]
        if marker == CS_GLOBAL and arity is not None and parts[0] in _UNRESOLVED_SCOPES:
            # ``ThreadSafe.IList<T> Modules`` under ``using ThreadSafe =
            # System.Collections.Generic;``: a .NET type, whose calls may still be the
            # project's extension methods (``Modules.GetSafeEnumerable()``).
            parts = parts[-2:]
    if not parts or "?" in parts or parts[0] in _UNRESOLVED_SCOPES:
        return target
    module = f"{marker}.{context}" if context else marker
    # ``+`` is in no identifier of either language: the opened namespaces ride along.
    module += "".join(f"+{namespace}" for namespace in opened)
    module += f"#{arity}" if arity is not None else ""
    return Reference(name=".".join(parts), module=module)


def lookup_keys(scope: str, reference: Reference) -> list[str]:
    """Candidate keys of a reference made by :func:`scoped_lookup`, innermost scope first
    (``<global>|leveldb.DBImpl.Get``, ``<global>|leveldb.Get``, ``<global>|Get``), then in
    each opened namespace."""
    assert reference.module is not None
    module, _, counted = reference.module.partition("#")  # C#: a member call's arguments
    arity = int(counted) if counted.isdigit() else None
    written, *opened = module.split("+")
    marker, _, dotted = written.partition(".")
    context = [p for p in dotted.split(".") if p]
    keys = [
        f"{scope}|{marker}|{'.'.join([*context[:cut], reference.name])}"
        for cut in range(len(context), -1, -1)
    ]
    keys += [f"{scope}|{marker}|{namespace}.{reference.name}" for namespace in opened]
    if marker == CS_GLOBAL:
        keys += member_keys(scope, reference, context, opened, arity)
    head, dot, rest = reference.name.partition(".")
    if marker == SW_GLOBAL and dot:  # ``String.wrapped``: StringProtocol's too (and the head
        # of a join: ``Array.allArguments().merging`` is BidirectionalCollection's)
        keys += [f"{scope}|{marker}|{protocol}.{rest}" for protocol in conformances(head)]
    return list(dict.fromkeys(keys))


def is_scoped_lookup(reference: Reference) -> bool:
    """A reference :func:`scoped_lookup` made (C++ or C#)."""
    module = reference.module
    return module is not None and any(
        module == marker or module.startswith((f"{marker}.", f"{marker}+", f"{marker}#"))
        for marker in (C_GLOBAL, CS_GLOBAL, RB_GLOBAL, SW_GLOBAL)
    )
