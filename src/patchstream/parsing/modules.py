"""Module names of files and the bindings their import statements create, per language.

Import paths are normalized so that the graph sink can match them against module names of
other files: Python dotted absolute names, JS/TS repository paths without extension, Go
import paths (matched by suffix against directories), Java packages, Rust ``crate::`` paths.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

import tree_sitter as ts

from patchstream.parsing.source import Source

_JS_EXTENSIONS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".d.ts")


@dataclass(frozen=True)
class ImportBinding:
    """``local`` is the name the import binds (``None`` for wildcard and side-effect imports);
    ``name`` is the imported member (``""`` for a whole module, ``"*"`` for a wildcard)."""

    local: str | None
    module: str
    name: str


def module_name(language: str, path: str, package: str | None = None) -> str:
    """The module a file defines, in the notation its language imports it with."""
    if language == "python":
        stem = path.removesuffix(".pyi").removesuffix(".py")
        stem = stem.removeprefix("src/")
        parts = stem.split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)
    if language in ("javascript", "typescript", "tsx"):
        stem = _strip_js_extension(path)
        return stem.removesuffix("/index") if stem.endswith("/index") else stem
    if language == "go":
        return posixpath.dirname(path) or "."
    if language in ("java", "csharp", "kotlin", "scala", "php"):  # a package; a namespace
        return package or ""
    if language in ("c", "cpp"):  # ``x.h`` and ``x.c`` (``x.cc``) beside it are one module
        return posixpath.splitext(path)[0]
    if language == "ruby":  # what ``require_relative`` names: the path without ``.rb``
        return path.removesuffix(".rb")
    if language == "swift":  # a target (module) is a directory of files
        return posixpath.dirname(path) or "."
    if language == "rust":
        stem = path.removesuffix(".rs")
        if "src/" in stem or stem.startswith("src"):
            stem = stem[stem.rfind("src") + 3 :].lstrip("/")
        parts = [p for p in stem.split("/") if p]
        if parts and parts[-1] in ("lib", "main", "mod"):
            parts = parts[:-1]
        return "::".join(["crate", *parts])
    return path


def _strip_js_extension(path: str) -> str:
    for ext in sorted(_JS_EXTENSIONS, key=len, reverse=True):
        if path.endswith(ext):
            return path[: -len(ext)]
    return path


def _unquote(text: str) -> str:
    return text.strip().strip("'\"`")


def import_bindings(
    language: str, node: ts.Node, path: str, module: str, src: Source
) -> list[ImportBinding]:
    """The bindings created by one import statement ``node`` of a file at ``path``."""
    if language == "python":
        return _python_imports(node, module, path, src)
    if language in ("javascript", "typescript", "tsx"):
        return _js_imports(node, path, src)
    if language == "go":
        return _go_imports(node, src)
    if language == "java":
        return _java_imports(node, src)
    if language == "csharp":
        return _csharp_usings(node, src)
    if language == "kotlin":
        return _kotlin_imports(node, src)
    if language == "scala":
        return _scala_imports(node, src, module)
    if language == "php":
        return _php_uses(node, src)
    if language == "rust":
        return _rust_imports(node, module, src)
    if language in ("c", "cpp"):
        return _c_includes(node, path, src)
    if language == "ruby":
        return _ruby_requires(node, path, src)
    if language == "swift":  # ``import ArgumentParserToolInfo``: a module, no name bound
        named = next((c for c in node.named_children if c.type == "identifier"), None)
        module = "".join(src.text(named).split()) if named is not None else ""
        return [ImportBinding(None, module, "")] if module else []
    return []


def _ruby_requires(node: ts.Node, path: str, src: Source) -> list[ImportBinding]:
    """``require_relative "tag"``: the file beside; ``require "liquid/tag"``: the file under
    the repository's ``lib/`` (Ruby's load path by convention) or its root. A whole file,
    no name bound: Ruby's names are the program's."""
    arguments = node.child_by_field_name("arguments")
    string = arguments.named_children[0] if arguments is not None else None
    content = string.named_children[0] if string is not None and string.named_children else None
    written = src.text(content).removesuffix(".rb") if content is not None else ""
    if not written or written.startswith("/") or "\\" in written or len(written) > 400:
        return []
    method = src.text(node.child_by_field_name("method"))
    if method == "require_relative":
        found = [posixpath.normpath(posixpath.join(posixpath.dirname(path), written))]
    else:
        found = [f"lib/{written}", written]
        top = path.split("/lib/", 1)[0] if "/lib/" in path else ""
        found += [f"{top}/lib/{written}"] if top else []
    return [ImportBinding(None, module, "") for module in found if not module.startswith("..")]


# Functions and types of C live in one namespace, the program's (the linker's): a name no
# file's own definition or macro binds is looked up there, whichever file defines it.
C_GLOBAL = "<global>"
CS_GLOBAL = "<cs>"  # C#'s program-wide namespace: every project type, by its full name
RB_GLOBAL = "<rb>"  # Ruby's: every constant and method, by its full name
SW_GLOBAL = "<sw>"  # Swift's: a module's types need no import within it


def _c_includes(node: ts.Node, path: str, src: Source) -> list[ImportBinding]:
    """``#include "x/y.h"``: the header beside the file, and the one at the repository's
    root (no include directories are known to one file); a whole module, no name bound."""
    written = _unquote(src.text(node.child_by_field_name("path")))
    if not written or written.startswith("/") or "\\" in written:
        return []
    beside = posixpath.normpath(posixpath.join(posixpath.dirname(path), written))
    found = [posixpath.splitext(beside)[0]]
    rooted = posixpath.splitext(posixpath.normpath(written))[0]
    if rooted != found[0] and not rooted.startswith(".."):
        found.append(rooted)
    return [ImportBinding(None, module, "") for module in found if not module.startswith("..")]


def _python_package(module: str, path: str) -> list[str]:
    parts = module.split(".") if module else []
    return parts if path.endswith("__init__.py") else parts[:-1]


def _python_imports(node: ts.Node, module: str, path: str, src: Source) -> list[ImportBinding]:
    out: list[ImportBinding] = []
    if node.type == "import_statement":
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                target = src.text(child.child_by_field_name("name"))
                out.append(ImportBinding(src.text(child.child_by_field_name("alias")), target, ""))
            else:
                target = src.text(child)
                out.append(ImportBinding(target, target, ""))
        return out
    source = node.child_by_field_name("module_name")
    raw = src.text(source)
    if source is not None and source.type == "relative_import":
        level = len(raw) - len(raw.lstrip("."))
        base = _python_package(module, path)
        base = base[: len(base) - (level - 1)] if level > 1 else base
        rest = raw[level:]
        target = ".".join([*base, rest] if rest else base)
    else:
        target = raw
    if any(child.type == "wildcard_import" for child in node.children):
        return [ImportBinding(None, target, "*")]
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = src.text(child.child_by_field_name("name"))
            out.append(ImportBinding(src.text(child.child_by_field_name("alias")), target, name))
        else:
            name = src.text(child)
            out.append(ImportBinding(name, target, name))
    return out


def _js_source(raw: str, path: str) -> str:
    if raw.startswith("."):
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), raw))
        stem = _strip_js_extension(joined)
        return stem.removesuffix("/index") if stem.endswith("/index") else stem
    return raw


def _js_imports(node: ts.Node, path: str, src: Source) -> list[ImportBinding]:
    if node.type in ("lexical_declaration", "variable_declaration"):
        return _commonjs_requires(node, path, src)
    source = node.child_by_field_name("source")
    if source is None:
        return []
    target = _js_source(_unquote(src.text(source)), path)
    out: list[ImportBinding] = []
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    if clause is None:
        return [ImportBinding(None, target, "")]
    for part in clause.named_children:
        if part.type == "identifier":
            out.append(ImportBinding(src.text(part), target, "default"))
        elif part.type == "namespace_import":
            ident = next((c for c in part.named_children if c.type == "identifier"), None)
            out.append(ImportBinding(src.text(ident), target, ""))
        elif part.type == "named_imports":
            for spec in part.named_children:
                if spec.type != "import_specifier":
                    continue
                name = _unquote(src.text(spec.child_by_field_name("name")))
                alias = spec.child_by_field_name("alias")
                out.append(ImportBinding(src.text(alias) if alias else name, target, name))
    return out


def required_module(declarator: ts.Node, src: Source) -> ts.Node | None:
    """The string ``x = require("./x")`` names, when the declarator is one: CommonJS's
    import (a declaration may hold others: ``const a = require("a"), n = 0``)."""
    value = declarator.child_by_field_name("value")
    function = value.child_by_field_name("function") if value is not None else None
    if function is None or function.type != "identifier" or src.text(function) != "require":
        return None
    arguments = value.child_by_field_name("arguments") if value is not None else None
    first = (
        arguments.named_children[0] if arguments is not None and arguments.named_children else None
    )
    return first if first is not None and first.type == "string" else None


def _commonjs_requires(node: ts.Node, path: str, src: Source) -> list[ImportBinding]:
    """CommonJS: ``const { a, b: c } = require("./x")`` binds names of ``./x`` as named
    imports do. ``const X = require("./x")`` is either the module's exports object or the
    one thing it exports (``module.exports = class X``); by convention a capitalised name is
    that class or function (``new X()``, ``X.of()``: ``X`` of ``./x``) and any other name
    the exports object (``astUtils.isTokenOnSameLine()``: ``isTokenOnSameLine`` of ``./x``)."""
    out: list[ImportBinding] = []
    for declarator in node.named_children:
        written = required_module(declarator, src)
        name = declarator.child_by_field_name("name")
        if written is None or name is None:
            continue
        target = _js_source(_unquote(src.text(written)), path)
        if name.type == "identifier":
            local = src.text(name)
            out.append(ImportBinding(local, target, local if local[:1].isupper() else ""))
        elif name.type == "object_pattern":
            for part in name.named_children:
                if part.type == "shorthand_property_identifier_pattern":
                    out.append(ImportBinding(src.text(part), target, src.text(part)))
                elif part.type == "pair_pattern":
                    key, bound = part.child_by_field_name("key"), part.child_by_field_name("value")
                    if key is not None and bound is not None and bound.type == "identifier":
                        out.append(ImportBinding(src.text(bound), target, src.text(key)))
    return out


def _go_imports(node: ts.Node, src: Source) -> list[ImportBinding]:
    out: list[ImportBinding] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "import_spec":
            target = _unquote(src.text(current.child_by_field_name("path")))
            alias = current.child_by_field_name("name")
            alias_text = src.text(alias)
            if alias_text in ("_", "."):
                out.append(ImportBinding(None, target, "*" if alias_text == "." else ""))
            else:
                local = alias_text or target.rsplit("/", 1)[-1]
                out.append(ImportBinding(local, target, ""))
        else:
            stack.extend(reversed(current.named_children))
    return out


def _java_imports(node: ts.Node, src: Source) -> list[ImportBinding]:
    text = src.text(node).removeprefix("import").strip().rstrip(";").strip()
    text = text.removeprefix("static").strip().replace(" ", "")
    if text.endswith(".*"):
        return [ImportBinding(None, text[:-2], "*")]
    module, _, name = text.rpartition(".")
    return [ImportBinding(name, module, name)]


def _php_uses(node: ts.Node, src: Source) -> list[ImportBinding]:
    """``use A\\B\\C;``, ``use A\\B\\C as D;``, ``use function A\\f;`` and the grouped
    ``use A\\B\\{C, D as E};``: each binds its last name (or alias) to the name in its
    namespace (``PhpSource`` reads ``A\\B`` as ``A.B``)."""
    prefix = next((c for c in node.named_children if c.type == "namespace_name"), None)
    group = next((c for c in node.named_children if c.type == "namespace_use_group"), None)
    head = f"{src.text(prefix)}." if prefix is not None and group is not None else ""
    clauses = (group or node).named_children
    bindings = []
    for clause in clauses:
        if clause.type != "namespace_use_clause":
            continue
        alias = clause.child_by_field_name("alias")
        target = next((c for c in clause.named_children
                       if c.type in ("name", "qualified_name") and c != alias), None)  # fmt: skip
        if target is None:
            continue
        dotted = (head + src.text(target)).removeprefix("global.")
        module, _, name = dotted.rpartition(".")
        local = src.text(alias) if alias is not None else name
        bindings.append(ImportBinding(local, module, name))
    return bindings


def _csharp_usings(node: ts.Node, src: Source) -> list[ImportBinding]:
    """``using Acme.Util;`` opens a namespace (a wildcard), ``using static Acme.Util;`` a
    class's static members, ``using U = Acme.Util;`` names one (``global using`` too)."""
    alias = node.child_by_field_name("name")
    target = next((c for c in node.named_children if c.type in ("identifier", "qualified_name")
                   and c != alias), None)  # fmt: skip
    if target is None:
        return []
    dotted = "".join(src.text(target).split()).removeprefix("global::")
    if alias is None:
        return [ImportBinding(None, dotted, "*")]
    module, _, name = dotted.rpartition(".")
    return [ImportBinding(src.text(alias), module, name)]


def _kotlin_imports(node: ts.Node, src: Source) -> list[ImportBinding]:
    """``import a.b.C``, ``import a.b.C as D``, ``import a.b.*`` (a wildcard)."""
    path = next((c for c in node.named_children if c.type == "qualified_identifier"), None)
    if path is None:
        return []
    dotted = "".join(src.text(path).split())
    if "".join(src.text(node).split()).endswith(".*"):
        return [ImportBinding(None, dotted, "*")]
    alias = next((c for c in node.named_children if c.type == "identifier"), None)
    module, _, name = dotted.rpartition(".")
    return [ImportBinding(src.text(alias) if alias is not None else name, module, name)]


def _scala_imports(node: ts.Node, src: Source, package: str = "") -> list[ImportBinding]:
    """``import a.b.C``, ``import a.b._`` (a wildcard), ``import a.b.{C, D => E}``. Scala's
    imports are relative: ``import event._`` in ``package scala.swing`` opens
    ``scala.swing.event`` where it exists, else the root's ``event``; a wildcard opens both."""
    path = [src.text(c) for c in node.named_children if c.type == "identifier"]
    selectors = next((c for c in node.named_children if c.type == "namespace_selectors"), None)
    if any(c.type == "namespace_wildcard" for c in node.named_children):
        written = ".".join(path)
        inner = f"{package}.{written}" if package and path and path[0] != "_root_" else ""
        if inner and not written.startswith(f"{package}."):
            return [ImportBinding(None, inner, "*"), ImportBinding(None, written, "*")]
        return [ImportBinding(None, written.removeprefix("_root_."), "*")]
    if selectors is None:
        if not path:
            return []
        return [ImportBinding(path[-1], ".".join(path[:-1]), path[-1])]
    module, out = ".".join(path), []
    for selector in selectors.named_children:
        if selector.type == "identifier":
            out.append(ImportBinding(src.text(selector), module, src.text(selector)))
        elif selector.type == "arrow_renamed_identifier":
            name = src.text(selector.child_by_field_name("name"))
            alias = src.text(selector.child_by_field_name("alias"))
            out.append(ImportBinding(alias, module, name))
    return out


def rust_absolute(segments: list[str], module: str) -> list[str]:
    """Resolve ``self``/``super`` against the current module (``crate::a::b``)."""
    current = module.split("::")
    if not segments:
        return segments
    if segments[0] == "self":
        return [*current, *segments[1:]]
    if segments[0] == "super":
        base = current
        rest = segments
        while rest and rest[0] == "super":
            base = base[:-1] if len(base) > 1 else base
            rest = rest[1:]
        return [*base, *rest]
    return segments


def _rust_imports(node: ts.Node, module: str, src: Source) -> list[ImportBinding]:
    out: list[ImportBinding] = []
    argument = node.child_by_field_name("argument")
    # (node, prefix segments) pairs; iterative so nested use-trees cannot overflow the stack.
    stack: list[tuple[ts.Node | None, list[str]]] = [(argument, [])]
    while stack:
        current, prefix = stack.pop()
        if current is None:
            continue
        kind = current.type
        if kind == "self" and prefix:  # ``use crate::ast::{self, Ast}`` binds ``ast``
            full = rust_absolute(prefix, module)
            out.append(ImportBinding(full[-1], "::".join(full[:-1]), full[-1]))
        elif kind in ("identifier", "scoped_identifier", "crate", "self", "super"):
            full = rust_absolute([*prefix, *src.text(current).split("::")], module)
            out.append(ImportBinding(full[-1], "::".join(full[:-1]), full[-1]))
        elif kind == "use_as_clause":
            full = rust_absolute(
                [*prefix, *src.text(current.child_by_field_name("path")).split("::")], module
            )
            alias = src.text(current.child_by_field_name("alias"))
            out.append(ImportBinding(alias, "::".join(full[:-1]), full[-1]))
        elif kind == "use_wildcard":
            inner = current.named_children[0] if current.named_children else None
            full = rust_absolute([*prefix, *src.text(inner).split("::")], module)
            out.append(ImportBinding(None, "::".join(full), "*"))
        elif kind == "scoped_use_list":
            path_node = current.child_by_field_name("path")
            new_prefix = [*prefix, *src.text(path_node).split("::")] if path_node else prefix
            stack.append((current.child_by_field_name("list"), new_prefix))
        elif kind == "use_list":
            stack.extend((child, prefix) for child in reversed(current.named_children))
    return out
