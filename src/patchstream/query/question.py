"""What a question names in code, and the files that define it: the ranked list the graph
adds to search (a code-blind BM25 has nothing like it).

An issue pasted as it is names code in a few recognisable shapes: traceback frames (``File
"x/y.py", line 3, in parse``; gdb's ``#0 ... in kv_get (...) at src/kv.c:21``), file paths
(``src/app/config.py``), dotted names (``requests.sessions.Session.send``), CamelCase and
snake_case identifiers, and calls (``update()``). ``named_in`` pulls them out, bounded;
``named_files`` turns them into files: a traceback's frames first (innermost last in Python's
order, so read backwards), then files a path names, then the files that define the most named
symbols. Nothing here does I/O: the caller passes how to find names' definers (the graph, in
one query) and which paths exist.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from patchstream.stores.vector.file_ranker import NamedFiles

__all__ = ["MAX_NAMES", "Named", "NamedFiles", "file_name_index", "named_files", "named_in"]

MAX_NAMES = 16  # graph lookups per question: each is a round trip

# Possessive quantifiers throughout: issue text is hostile input, and a nested ``+`` that can
# split a run of capitals two ways took 38 s on 33 characters ("Ab" + 30 "A" + "_").
_FRAME = re.compile(r'File "([^"\n]{1,300}+)", line \d++(?:, in (\w++))?')
# gdb's backtrace of a C program: ``#1  0x55d4 in kv_get (store=0x0, key=...) at src/kv.c:21``
# (a C++ frame names its function with its namespaces and class: ``leveldb::DBImpl::Write``)
_GDB_FRAME = re.compile(r"#\d++\s++(?:0x[0-9a-f]++ in )?+((?:\w++::){0,8}+~?\w++) "
                        r"\([^)\n]{0,300}+\) at ([\w./-]{1,300}+):\d++")  # fmt: skip
# Ruby's backtrace: ``app/models/user.rb:12:in `save'`` (3.4 writes ``'User#save'``).
_RUBY_FRAME = re.compile(r"([\w./-]{1,300}?\.rb):\d++:in [`'](?:[\w:]{0,200}+[#.])?+(\w++[?!]?+)'")
# .NET's stack trace: ``at Shop.Cart.Total(Decimal rate) in /src/Shop/Cart.cs:line 42``.
_DOTNET_FRAME = re.compile(r"\bat (?:[\w`]{1,200}+\.){0,20}+(\w++)\([^)\n]{0,300}+\) in "
                           r"([\w:./\\-]{1,300}?\.cs):line \d++")  # fmt: skip
# PHP's stack trace: ``#0 /var/www/src/Cart.php(42): Shop\Cart->total()``.
_PHP_FRAME = re.compile(r"#\d{1,6}+ ([\w./-]{1,300}?\.php)\(\d++\): "
                        r"(?:[\w\\]{1,200}+(?:->|::))?+(\w++)\(")  # fmt: skip
_PATH = re.compile(
    r"(?<![\w/.-])((?:[\w.-]++/)*+[\w.-]+\."
    r"(?:py|pyi|js|jsx|ts|tsx|go|java|rs|cpp|cc|cxx|hpp|hh|hxx|c|h|rb|cs|php|kt|swift|scala))\b"
)
_DOTTED = re.compile(r"\b([A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)++)\b")
_CAMEL = re.compile(
    r"\b([A-Z][a-z0-9]++(?:[A-Z][a-z0-9]*+)++|[a-z][a-z0-9]*+(?:[A-Z][a-z0-9]*+)++)\b"
)
_SNAKE = re.compile(r"\b([A-Za-z][A-Za-z0-9]*+(?:_[A-Za-z0-9]++)++)\b")
_CALL = re.compile(r"\b([A-Za-z_]\w{2,}+)\(")
# Words of prose that look like code in these shapes (``e.g``, ``i.e``, sentence ends).
_PROSE = frozenset({"e.g", "i.e", "etc", "self", "cls", "print", "len", "str", "int",
                    "dict", "list", "set", "tuple", "type", "isinstance", "super", "range",
                    "open"})  # fmt: skip


def _repo_relative(path: str) -> str:
    """A Windows or absolute path of a stack trace, from its last ``src``-like root on: the
    repository's files are matched by their ending anyway."""
    return path.replace("\\", "/").split(":", 1)[-1].lstrip("/")


@dataclass
class Named:
    """What a question names: traceback frames (path, function), paths, identifiers."""

    frames: list[tuple[str, str | None]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.frames or self.paths or self.names)


def named_in(question: str, max_names: int = MAX_NAMES, by_position: bool = False) -> Named:
    """The code ``question`` names, most specific first, each kind bounded. Names come
    frames first, then by shape (dotted, CamelCase, snake_case, calls); ``by_position``
    orders them by where they first appear instead (an issue's title first)."""
    found = Named()
    for path, function in _FRAME.findall(question):
        found.frames.append((path, function or None))
    # gdb prints the innermost frame first, Python last: stored in Python's order.
    for function, path in reversed(_GDB_FRAME.findall(question)):
        found.frames.append((path, function.rsplit("::", 1)[-1]))
    # Ruby, .NET and PHP print the innermost frame first too.
    for path, function in reversed(_RUBY_FRAME.findall(question)):
        found.frames.append((path, function))
    for function, path in reversed(_DOTNET_FRAME.findall(question)):
        found.frames.append((_repo_relative(path), function))
    for path, function in reversed(_PHP_FRAME.findall(question)):
        found.frames.append((_repo_relative(path), function))
    framed = {p for p, _ in found.frames}
    found.paths = _unique(p for p in _PATH.findall(question) if p not in framed)[:max_names]
    names: list[str] = [f for _, f in found.frames if f and f != "<module>"]
    placed: list[tuple[int, int, str]] = []  # (position, shape, name)
    for match in _DOTTED.finditer(question):
        dotted = match.group(1)
        if _PATH.fullmatch(dotted) or dotted.lower() in _PROSE:
            continue
        parts = dotted.split(".")
        for part in [parts[-1], parts[-2]] if len(parts) > 1 else parts:
            placed.append((match.start(), 0, part))
    for shape, pattern in enumerate((_CAMEL, _SNAKE, _CALL), start=1):
        placed += [(m.start(), shape, m.group(1)) for m in pattern.finditer(question)]
    if by_position:
        placed.sort(key=lambda item: (item[0], item[1]))
    else:
        placed.sort(key=lambda item: item[1])  # stable: by shape, then where it appears
    names += [name for _, _, name in placed]
    found.names = _unique(n for n in names if n.lower() not in _PROSE and len(n) > 2)
    found.names = found.names[:max_names]
    return found


# A name defined in more files than this says nothing of where a question belongs (each would
# get less than 1/2,000 of a name's weight); the graph does not send them. At 20k files,
# ``__init__`` alone was ~10k rows of a search's definers read. The SWE-bench repositories the
# weights were chosen on have fewer files than this, so none of their names reaches it.
MAX_DEFINERS = 2000


def file_name_index(paths: Iterable[str]) -> dict[str, list[str]]:
    """Paths by their file name (``a/b/c.py`` under ``c.py``): what ``named_files`` matches a
    question's paths against. The search copy keeps one as it learns paths."""
    by_name: defaultdict[str, list[str]] = defaultdict(list)
    for known in paths:
        by_name[known.rpartition("/")[2]].append(known)
    return dict(by_name)


def named_files(
    named: Named, definers: Callable[[Sequence[str]], Mapping[str, Iterable[str]]],
    by_name: Mapping[str, Sequence[str]],
) -> NamedFiles:  # fmt: skip
    """Files of the view the question points at, best first: traceback frames (the
    innermost first), files its paths name (by path suffix; ``by_name``: the known paths by
    file name, ``file_name_index``), then files defining the most of its names (a name
    defined in many files counts less in each, and one in over ``MAX_DEFINERS`` not at
    all)."""
    ranked: list[str] = []
    for path, _ in reversed(named.frames):
        ranked += _by_suffix(path, by_name)
    for path in named.paths:
        ranked += _by_suffix(path, by_name)
    explicit = len(_unique(ranked))
    weights: defaultdict[str, float] = defaultdict(float)
    for files in map(set, definers(named.names).values()):
        if len(files) > MAX_DEFINERS:
            continue
        for path in files:
            weights[path] += 1.0 / len(files)
    ranked += [path for path, _ in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))]
    return NamedFiles(_unique(ranked), explicit, dict(weights))


def _by_suffix(path: str, by_name: Mapping[str, Sequence[str]]) -> list[str]:
    """Known paths (``by_name``: by file name) equal to ``path`` or ending with it at a
    directory boundary (a traceback prints an absolute path; an issue may drop the leading
    package)."""
    wanted = path.replace("\\", "/").lstrip("./")
    parts = wanted.split("/")
    known = by_name.get(parts[-1], [])
    for start in range(len(parts)):  # the longest suffix that matches anything
        tail = "/".join(parts[start:])
        hits = [k for k in known if k == tail or k.endswith("/" + tail)]
        if hits:
            return sorted(hits, key=len)[:3]
    return []


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
