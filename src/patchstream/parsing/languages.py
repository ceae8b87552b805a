"""Languages patchstream extracts structure from, chosen by file extension (and, for a
``.h`` header, by what it holds: C or C++)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import tree_sitter as ts
import tree_sitter_c
import tree_sitter_c_sharp
import tree_sitter_cpp
import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_kotlin
import tree_sitter_php
import tree_sitter_python
import tree_sitter_ruby
import tree_sitter_rust
import tree_sitter_scala
import tree_sitter_swift
import tree_sitter_typescript

from patchstream.errors import UnsupportedLanguageError


@dataclass(frozen=True)
class LanguageSpec:
    """A grammar, the extensions that select it and the tag query it runs."""

    name: str
    extensions: tuple[str, ...]
    grammar: Callable[[], Any]
    query_name: str


LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        LanguageSpec("python", (".py", ".pyi"), tree_sitter_python.language, "python"),
        LanguageSpec(
            "javascript",
            (".js", ".jsx", ".mjs", ".cjs"),
            tree_sitter_javascript.language,
            "javascript",
        ),
        LanguageSpec(
            "typescript",
            (".ts", ".mts", ".cts"),
            tree_sitter_typescript.language_typescript,
            "typescript",
        ),
        LanguageSpec("tsx", (".tsx",), tree_sitter_typescript.language_tsx, "typescript"),
        LanguageSpec("go", (".go",), tree_sitter_go.language, "go"),
        LanguageSpec("java", (".java",), tree_sitter_java.language, "java"),
        LanguageSpec("rust", (".rs",), tree_sitter_rust.language, "rust"),
        LanguageSpec("c", (".c", ".h"), tree_sitter_c.language, "c"),
        LanguageSpec(
            "cpp",
            (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tpp"),
            tree_sitter_cpp.language,
            "cpp",
        ),
        LanguageSpec("csharp", (".cs",), tree_sitter_c_sharp.language, "csharp"),
        LanguageSpec("kotlin", (".kt", ".kts"), tree_sitter_kotlin.language, "kotlin"),
        LanguageSpec("scala", (".scala", ".sc"), tree_sitter_scala.language, "scala"),
        LanguageSpec("php", (".php",), tree_sitter_php.language_php, "php"),
        LanguageSpec("ruby", (".rb", ".rake"), tree_sitter_ruby.language, "ruby"),
        LanguageSpec("swift", (".swift",), tree_sitter_swift.language, "swift"),
    )
}
C_FAMILY = frozenset({"c", "cpp"})  # the preprocessor, headers, one program-wide namespace
# What only C++ writes, looked for in a ``.h`` header's first 64 KiB (not ``extern "C"``: C
# headers write it for their C++ users).
# Every part is bounded to its line: a header is untrusted, and ``[^;]*`` across lines made
# 8,000 lines of ``class a`` quadratic.
_CPP_MARKS = re.compile(
    rb"^[ \t]{0,40}(?:namespace[ \t]{1,40}[\w:]{0,200}[ \t]{0,40}\{|template[ \t]{0,40}<|"
    rb"class[ \t]{1,40}\w{1,200}[^;{\n]{0,200}\{|(?:public|private|protected)[ \t]{0,40}:)"
    rb"|\bstd::\w",
    re.MULTILINE,
)

_BY_EXTENSION: dict[str, str] = {
    ext: spec.name for spec in LANGUAGES.values() for ext in spec.extensions
}


def language_for_path(path: str) -> str | None:
    """The language name for ``path`` by extension, or ``None`` when unsupported."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    return _BY_EXTENSION.get(path[dot:].lower())


def language_for(path: str, data: bytes) -> str | None:
    """:func:`language_for_path`, except that a ``.h`` header holding C++ (a namespace, a
    template, a class body, ``std::``) is C++: projects of both languages name headers so."""
    language = language_for_path(path)
    if language == "c" and path.endswith(".h") and _CPP_MARKS.search(data[:65536]):
        return "cpp"
    return language


def _spec(name: str) -> LanguageSpec:
    try:
        return LANGUAGES[name]
    except KeyError:
        known = ", ".join(sorted(LANGUAGES))
        raise UnsupportedLanguageError(
            f"no grammar for language {name!r}; supported: {known}"
        ) from None


@cache
def get_language(name: str) -> ts.Language:
    return ts.Language(_spec(name).grammar())


@cache
def get_query(name: str) -> ts.Query:
    """The tag query of a language, shipped as package data in ``parsing/queries``."""
    spec = _spec(name)
    source = resources.files("patchstream.parsing").joinpath(f"queries/{spec.query_name}.scm")
    return ts.Query(get_language(name), source.read_text(encoding="utf-8"))
