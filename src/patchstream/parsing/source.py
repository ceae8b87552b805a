"""Text of syntax nodes, sliced from the bytes that were parsed.

Trees parsed through a read callback do not keep the source, so ``Node.text`` would go back
to the callback; slicing our own bytes is exact and much cheaper.
"""

from __future__ import annotations

import tree_sitter as ts


class Source:
    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def raw(self, node: ts.Node | None) -> bytes:
        return b"" if node is None else self.data[node.start_byte : node.end_byte]

    def text(self, node: ts.Node | None) -> str:
        return self.raw(node).decode("utf-8", "replace")
