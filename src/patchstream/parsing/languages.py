"""Languages patchstream extracts structure from, chosen by file extension."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import tree_sitter as ts
import tree_sitter_c
import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_rust
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
    )
}

_BY_EXTENSION: dict[str, str] = {
    ext: spec.name for spec in LANGUAGES.values() for ext in spec.extensions
}


def language_for_path(path: str) -> str | None:
    """The language name for ``path`` by extension, or ``None`` when unsupported."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    return _BY_EXTENSION.get(path[dot:].lower())


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
