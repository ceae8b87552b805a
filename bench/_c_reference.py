"""The C side of ``correctness.py``: real C projects (clones under ``/work/.mirror``, fetched
once, never at run time, each at a pinned commit) and caller edges from GCC's own call graph.

Every ``.c`` file is compiled alone with ``gcc -O0 -fcallgraph-info`` (no inlining, so every
call the source writes stays a call); each ``.ci`` file lists the translation unit's
functions (a static one as ``file.c:name``) and its call edges. A callee GCC knows only by a
declaration (a prototype in a header) is joined to the one definition of that name among the
project's functions; a name several programs of the project define (``main``, ``usage``, a
helper copied between examples) cannot be joined without the link step, and a name a system
header declares is the C library's (a test's freestanding ``memcpy`` is not what the rest
calls): edges to either are left out on both sides and counted. Macros are left out on both
sides too: GCC sees what they expand to.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from patchstream.parsing.c_language import is_macro
from patchstream.schemas.graph import SymbolKind
from patchstream.schemas.state import FileState

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "c"
Edge = tuple[str, str]
_STANDARD_HEADERS = ("assert.h", "limits.h", "stdarg.h", "stddef.h", "stdint.h", "stdio.h",
                     "stdlib.h", "string.h", "time.h", "errno.h", "math.h")  # fmt: skip


@dataclass(frozen=True)
class CCorpus:
    name: str
    mirror: Path
    commit: str
    licence: str
    flags: tuple[str, ...] = ()  # extra gcc flags (defines a build would pass)

    @property
    def label(self) -> str:
        return f"{self.name} at {self.commit[:10]} ({self.licence})"


C_CORPORA = {
    "lua": CCorpus("lua", Path("/work/.mirror/lua+lua/repo"),
                   "53b41d0c", "MIT", ("-DLUA_USE_LINUX",)),
    "zlib": CCorpus("zlib", Path("/work/.mirror/madler+zlib/repo"), "d201f04", "Zlib"),
    # Held out: measured once C's rules were settled on lua and zlib, never tuned on.
    "lz4": CCorpus("lz4", Path("/work/.mirror/lz4+lz4/repo"), "d9c01a3d", "BSD-2-Clause/GPL-2.0"),
    "zstd": CCorpus("zstd", Path("/work/.mirror/facebook+zstd/repo"), "2dddf0905",
                    "BSD-3-Clause/GPL-2.0"),
}  # fmt: skip


class Pinned(Protocol):
    name: str
    mirror: Path
    commit: str


def c_tree(corpus: Pinned) -> Path:
    """The corpus's files at its pinned commit, unpacked on first use (C's and C++'s); only
    its ``archived`` folders where it names some (a mirror may lack the largest files)."""
    root = CACHE / f"{corpus.name}-{corpus.commit}" / corpus.name
    if root.is_dir():
        return root
    archive = subprocess.run(["git", "-C", str(corpus.mirror), "archive", "--end-of-options",
                              corpus.commit, *getattr(corpus, "archived", ())],
                             check=True, capture_output=True).stdout  # fmt: skip
    root.mkdir(parents=True)  # only once the archive was read: a failed one leaves nothing
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


_NODE = re.compile(r'node: \{ title: "(?P<title>[^"]+)" label: "(?P<name>[^\\"]+)\\n'
                   r'(?P<file>[^:"]+):(?P<line>\d+):\d+"')  # fmt: skip
# The projects' spellings of GCC's always_inline (zstd's FORCE_INLINE_TEMPLATE and
# HINT_INLINE, lz4's LZ4_FORCE_INLINE, xxhash's XXH_FORCE_INLINE).
_FORCED_INLINE = re.compile(r"always_inline|FORCE_INLINE|HINT_INLINE")
_EDGE = re.compile(r'edge: \{ sourcename: "(?P<src>[^"]+)" targetname: "(?P<dst>[^"]+)"')


@dataclass
class Reference:
    edges: set[Edge]
    ambiguous: set[str]  # names several definitions share that GCC saw called by name only
    compiled: int
    failed: list[str]
    functions: dict[str, str]  # id -> name: the project's functions (macros left out)
    compiled_functions: set[str]  # the definitions GCC compiled (not under an inactive #if)
    inlined: set[str] = field(default_factory=set)  # forced inline, so never a GCC node

    def through_inlined(self, edges: dict[Edge, int]) -> dict[Edge, int]:
        """Our edges as GCC reports calls: a function declared always-inline is inlined even
        at -O0, and GCC credits its calls to each caller it was inlined into. So A -> B -> C,
        with B forced inline, is also A -> C here (at the weaker resolution of the two).
        The source-level edges stay: a reader of the code asks for them."""
        calls: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for (src, dst), rank in edges.items():
            calls[src].append((dst, rank))
        found = dict(edges)
        for (src, dst), rank in edges.items():
            if dst not in self.inlined or src in self.inlined:
                continue
            stack, seen = [(dst, rank)], {dst}
            while stack:
                inner, weakest = stack.pop()
                for callee, callee_rank in calls.get(inner, []):
                    both = max(weakest, callee_rank)
                    if callee in self.inlined:
                        if callee not in seen:
                            seen.add(callee)
                            stack.append((callee, both))
                    else:
                        found[(src, callee)] = min(both, found.get((src, callee), both))
        return found

    def keeps(self, edge: Edge) -> bool:
        """Whether an edge is compared: between functions GCC compiled (not macros, not code
        under an inactive ``#if``: GCC says nothing of those), to one whose name no link step
        is needed to pin down."""
        name = self.functions.get(edge[1])
        compiled = edge[0] in self.compiled_functions and edge[1] in self.compiled_functions
        return compiled and name is not None and name not in self.ambiguous


def gcc_edges(root: Path, states: dict[str, FileState], corpus: CCorpus) -> Reference:
    """GCC's call edges between the project's functions, in patchstream's symbol ids."""
    # Definitions by (path, name) and by name: what an edge's ends are mapped onto.
    at: dict[tuple[str, str], str] = {}
    named: dict[str, set[str]] = defaultdict(set)
    functions: dict[str, str] = {}
    forced: set[str] = set()
    for path, state in states.items():
        for symbol in state.symbols:
            if symbol.kind is SymbolKind.FUNCTION and not _macro(symbol.signature):
                rel = path.split("/", 1)[1]  # states are keyed "<repo>/<path>"
                at[(rel, symbol.name)] = symbol.id
                named[symbol.name].add(symbol.id)
                functions[symbol.id] = symbol.name
                if _FORCED_INLINE.search(symbol.signature or ""):
                    forced.add(symbol.id)
    edges: set[Edge] = set()
    ambiguous: set[str] = set()
    compiled_functions: set[str] = set()
    compiled, failed = 0, []
    # Every directory with headers, before the system's (a project's own <zlib.h> wins over
    # an installed one), except one holding a C standard header of its own (zstd's stddef.h
    # for freestanding builds must not hide the system's): that one comes after them.
    folders = sorted({p.parent for p in root.rglob("*.h")})
    shadowing = {d for d in folders if any((d / name).exists() for name in _STANDARD_HEADERS)}
    includes = [*(f"-I{d}" for d in folders if d not in shadowing),
                *(f"-idirafter{d}" for d in sorted(shadowing))]  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        for source in sorted(root.rglob("*.c")):
            rel = str(source.relative_to(root))
            out = Path(scratch) / f"{compiled}-{len(failed)}.o"
            text = call_graph_info(["gcc", *corpus.flags, f"-iquote{source.parent}",
                                    f"-I{root}", *includes], rel, root, out)  # fmt: skip
            if text is None:
                failed.append(rel)
                continue
            compiled += 1
            where = {m["title"]: (m["name"], relative(m["file"], root))
                     for m in _NODE.finditer(text)}  # fmt: skip

            def symbol(title: str, where: dict[str, tuple[str, str]] = where) -> str | None:
                name, file = where.get(title, (title.rsplit(":", 1)[-1], ""))
                exact = at.get((file, name))
                if exact is not None:
                    return exact
                if file.startswith("/"):  # declared by a system header: the C library's own
                    ambiguous.add(name)  # (a test's freestanding memcpy is not what it calls)
                    return None
                candidates = named.get(name, set())
                if len(candidates) > 1:
                    ambiguous.add(name)
                return next(iter(candidates)) if len(candidates) == 1 else None

            for match in _NODE.finditer(text):
                if "shape : ellipse" not in text[match.end() : match.end() + 20]:
                    defined = at.get((relative(match["file"], root), match["name"]))
                    if defined is not None:  # a definition of this translation unit
                        compiled_functions.add(defined)
            for match in _EDGE.finditer(text):
                src, dst = symbol(match["src"]), symbol(match["dst"])
                if src is not None and dst is not None:
                    edges.add((src, dst))
    reference = Reference(set(), ambiguous, compiled, failed, functions, compiled_functions,
                          forced - compiled_functions)  # fmt: skip
    reference.edges = {edge for edge in edges if reference.keeps(edge)}
    return reference


def call_graph_info(compiler: list[str], source: str, root: Path, out: Path) -> str | None:
    """``source`` compiled alone at -O0 with ``-fcallgraph-info``: the ``.ci`` text, or None
    when it does not compile."""
    done = subprocess.run([*compiler, "-O0", "-w", "-fcallgraph-info", "-c", source, "-o",
                           str(out)], cwd=root, capture_output=True, text=True)  # fmt: skip
    info = out.with_suffix(".ci")
    if done.returncode != 0 or not info.exists():
        return None
    return info.read_text(errors="replace")


def relative(file: str, root: Path) -> str:
    path = Path(file)
    if path.is_absolute():
        try:
            return str(path.relative_to(root))
        except ValueError:
            return file
    return str(Path(file))


def _macro(signature: str | None) -> bool:
    return is_macro("c", signature)


def gcc_version() -> str:
    return subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
