"""Ruby's own rules for extraction.

A bare ``name`` is a local variable when the method (or block, or file) around assigns it or
takes it as a parameter, and a call of a method otherwise: Ruby's parser decides so, and so
does extraction (:func:`local_names`). Constants are looked up from where they are written
outward, as C++'s names are (``cpp_language.scoped_lookup``, marker ``RB_GLOBAL``): ``Tag``
inside ``module Liquid; class Block`` is ``Liquid::Block::Tag``, ``Liquid::Tag`` or ``Tag``.
"""

from __future__ import annotations

from functools import cache

import tree_sitter as ts

from patchstream.parsing.languages import get_language
from patchstream.parsing.source import Source

# Every way Ruby binds a local: parameters (of methods, blocks and lambdas, destructured
# ones too), assignments (plain, multiple, ``||=``), ``for x in``, ``rescue => e``.
_LOCALS = """
(method_parameters (identifier) @local)
(method_parameters (_ name: (identifier) @local))
(lambda_parameters (identifier) @local)
(lambda_parameters (_ name: (identifier) @local))
(block_parameters (identifier) @local)
(block_parameters (_ name: (identifier) @local))
(destructured_parameter (identifier) @local)
(assignment left: (identifier) @local)
(left_assignment_list (identifier) @local)
(left_assignment_list (rest_assignment (identifier) @local))
(operator_assignment left: (identifier) @local)
(for pattern: (identifier) @local)
(exception_variable (identifier) @local)
"""


# Kernel's and Module's words that shape a program (``require``, ``include``,
# ``attr_reader``, ``raise``): never a call of the project's.
KERNEL_WORDS = frozenset(
    {"require", "require_relative", "include", "extend", "prepend", "attr_reader",
     "attr_writer", "attr_accessor", "attr", "private", "public", "protected",
     "module_function", "raise", "puts", "p", "print", "lambda", "proc", "loop",
     "define_method", "alias_method", "private_constant", "private_class_method",
     "public_class_method", "autoload", "block_given?", "new", "freeze", "catch", "throw",
     "format", "sprintf", "fail", "warn", "sleep", "at_exit", "binding", "caller"}
)  # fmt: skip


@cache
def _locals_query() -> ts.Query:
    return ts.Query(get_language("ruby"), _LOCALS)


def local_names(tree: ts.Tree, src: Source) -> list[tuple[ts.Node, str]]:
    """Each node that binds a local, with the local's name."""
    captures = ts.QueryCursor(_locals_query()).captures(tree.root_node)
    return [(node, src.text(node)) for node in captures.get("local", [])]
