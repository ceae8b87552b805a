"""Callers of Ruby and PHP measured against what their own runtimes saw: traced test runs.

Neither language has a static resolver on Debian, so the reference is dynamic. The corpus's
own test suite runs under a tracer: Ruby's TracePoint (``ruby_trace.rb``: every call of a
method defined under the corpus's source folder, from a line there, and every ``new`` of
its classes) and Xdebug's function trace (``php_trace.php``, with ``php_resolve.php`` to find
where each traced method is written, by reflection); both also record the lines that ran
(Ruby's Coverage, Xdebug's coverage).

Both sides are (caller, callee) pairs of full names (namespace or module path and qualified
name), mapped to patchstream's definitions by file and line: the caller is the innermost
function or class around the call's line, as extraction attributes a call; the callee is
the definition at the traced method's first line. A constructor (``initialize``,
``__construct``) counts as its class, as ``new`` builds the class.

- **Recall**: the share of the traced edges patchstream has.
- **Precision** is measured where the run could have shown an edge: patchstream's edges whose
  caller holds a line that ran and names the callee there (its last name as a word); of
  those, the share the run confirms. An edge the tests never exercised counts on neither
  side, and a call the run made through ``send``, ``define_method`` or ``call_user_func``
  counts as a miss.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.schemas.state import FileState

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
Edge = tuple[str, str]
_CONSTRUCTOR = {"ruby": "initialize", "php": "__construct"}
_CONSTRUCTORS = frozenset(_CONSTRUCTOR.values())
_CALLABLE = (SymbolKind.FUNCTION, SymbolKind.CLASS)
_SKIPPED_DIRS = frozenset({"test", "tests", "Tests", "spec", "vendor", "Resources"})


@dataclass(frozen=True)
class TracedCorpus:
    name: str
    language: str  # "ruby" or "php"
    mirror: Path
    commit: str
    license: str
    source_root: str  # the folder measured, in the tree
    run: tuple[str, ...]  # the traced test run, in the tree's root
    # PHP: the classes' PSR-4 roots (no composer here): namespace prefix -> folders
    autoload: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def label(self) -> str:
        return f"{self.name} {self.commit} ({self.license})"


_MINITEST = 'Dir["test/{unit,integration}/**/*_test.rb"].sort.each { |f| require "./#{f}" }'
RUBY_CORPORA = {
    "liquid": TracedCorpus("liquid", "ruby", Path("/work/.mirror/Shopify+liquid/repo"),
                           "v5.4.0", "MIT", "lib", ("ruby", "-Ilib", "-Itest", "-e", _MINITEST)),
    # Held out: measured once Ruby's rules were settled on liquid.
    "rake": TracedCorpus("rake", "ruby", Path("/work/.mirror/ruby+rake/repo"), "v13.2.1", "MIT",
                         "lib", ("ruby", "-Ilib", "-Itest", "-e",
                                 'Dir["test/test_*.rb"].sort.each { |f| require "./#{f}" }')),
}  # fmt: skip
PHP_CORPORA = {
    "php-parser": TracedCorpus(
        "php-parser", "php", Path("/work/.mirror/nikic+PHP-Parser/repo"), "v4.19.4",
        "BSD-3-Clause", "lib", ("phpunit",), (("", ("lib", "test")),)),
    # Held out: measured once PHP's rules were settled on PHP-Parser.
    "symfony-yaml": TracedCorpus(
        "symfony-yaml", "php", Path("/work/.mirror/symfony+yaml/repo"), "v7.0.3", "MIT", ".",
        ("phpunit",), (("Symfony\\Component\\Yaml\\", (".",)),)),
}  # fmt: skip


def traced_tree(corpus: TracedCorpus) -> Path:
    """The corpus at its pinned commit with its tests (``git archive`` leaves out what
    ``export-ignore`` marks, tests often), checked out on first use."""
    root = CACHE / f"{corpus.name}-{corpus.commit}" / corpus.name
    if root.is_dir():
        return root
    root.mkdir(parents=True)
    env = {**os.environ, "GIT_INDEX_FILE": str(root.parent / "index")}
    sha = subprocess.run(["git", f"--git-dir={corpus.mirror}", "rev-parse", "--verify",
                          "--end-of-options", f"{corpus.commit}^{{commit}}"],
                         check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    subprocess.run(["git", f"--git-dir={corpus.mirror}", f"--work-tree={root}", "checkout",
                    "-f", sha, "--", "."], check=True, capture_output=True, env=env)  # fmt: skip
    if corpus.autoload:
        _write_autoload(root, corpus)
    return root


def _write_autoload(root: Path, corpus: TracedCorpus) -> None:
    """``vendor/autoload.php``: PSR-4 over the corpus's folders, and the one function of
    symfony/deprecation-contracts its code calls."""
    roots = {prefix: [f"__DIR__ . '/../{folder}/'" for folder in folders]
             for prefix, folders in corpus.autoload}  # fmt: skip
    table = ", ".join(f"{json.dumps(prefix)} => [{', '.join(dirs)}]"
                      for prefix, dirs in roots.items())  # fmt: skip
    (root / "vendor").mkdir(exist_ok=True)
    (root / "vendor" / "autoload.php").write_text(f"""<?php
spl_autoload_register(function (string $class): void {{
    foreach ([{table}] as $prefix => $dirs) {{
        if ($prefix !== '' && !str_starts_with($class, $prefix)) {{ continue; }}
        foreach ($dirs as $dir) {{
            $file = $dir . str_replace('\\\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {{ require $file; return; }}
        }}
    }}
}});
if (!function_exists('trigger_deprecation')) {{
    function trigger_deprecation(string $package, string $version, string $message,
                                 ...$args): void {{}}
}}
""")


def source_files(corpus: TracedCorpus, tree: Path) -> list[Path]:
    """Every source file of the measured folder (tests and vendored code left out)."""
    suffix = ".rb" if corpus.language == "ruby" else ".php"
    root = (tree / corpus.source_root).resolve()
    return [path for path in sorted(root.rglob(f"*{suffix}"))
            if not _SKIPPED_DIRS & set(path.relative_to(root).parts[:-1])]  # fmt: skip


def source_states(corpus: TracedCorpus, tree: Path) -> dict[str, FileState]:
    """:func:`source_files`' states, keyed by each one's path under the tree."""
    builder = FileStateBuilder()
    states = {}
    for path in source_files(corpus, tree):
        rel = str(path.relative_to(tree.resolve()))
        target = FileRef(tenant="t", repo=corpus.name, ref="main", path=rel, version=1)
        states[rel] = builder.build(target, path.read_bytes())
    return states


@dataclass
class Trace:
    calls: set[tuple[str, int, str, int]]  # (site path, line, callee's file, its first line)
    ran: dict[str, set[int]]  # path -> lines that ran (paths under the tree)
    # A method -> the declaration it overrides or implements, followed to the first one:
    # (path, first line) both (PHP's reflection; a call through a declared type binds there)
    roots: dict[tuple[str, int], tuple[str, int]]


def traced(corpus: TracedCorpus, tree: Path, states: dict[str, FileState]) -> Trace:
    """The corpus's test run under its tracer, cached beside the tree."""
    cached = tree.parent / "trace.json"
    if not cached.is_file():
        out = tree.parent / "trace"
        env = {**os.environ, "PATCHSTREAM_TRACE_ROOT": str((tree / corpus.source_root).resolve()),
               "PATCHSTREAM_TRACE_OUT": str(out)}  # fmt: skip
        if corpus.language == "ruby":
            command = [corpus.run[0], "-r", str(HERE / "ruby_trace.rb"), *corpus.run[1:]]
            subprocess.run(command, cwd=tree, env=env, capture_output=True, timeout=1800)
            raw = json.loads(out.read_text())
            calls, ran, roots = [tuple(c) for c in raw["calls"]], raw["lines"], raw["roots"]
        else:
            calls, ran, roots = _php_trace(corpus, tree, env, out, _classes(states))
        cached.write_text(json.dumps({"calls": sorted(calls), "ran": ran, "roots": roots}))
    raw = json.loads(cached.read_text())
    base = str(tree.resolve()) + "/"

    def at(where: str) -> tuple[str, int]:
        path, _, line = where.rpartition(":")
        return path.removeprefix(base), int(line)

    return Trace(
        calls={(s.removeprefix(base), sl, c.removeprefix(base), cl)
               for s, sl, c, cl in raw["calls"]},
        ran={path.removeprefix(base): set(lines) for path, lines in raw["ran"].items()},
        roots={at(method): (top.removeprefix(base), line)
               for method, (top, line) in raw["roots"].items()},
    )  # fmt: skip


def _classes(states: dict[str, FileState]) -> list[str]:
    """PHP: every class, interface and trait of the measured files, as PHP names them."""
    names = []
    for state in states.values():
        namespace = next((s.qualified_name for s in state.symbols
                          if s.kind is SymbolKind.MODULE), "")  # fmt: skip
        for symbol in state.symbols:
            if symbol.kind in (SymbolKind.CLASS, SymbolKind.INTERFACE):
                names.append(f"{namespace}.{symbol.qualified_name}".strip(".").replace(".", "\\"))
    return names


def _php_trace(
    corpus: TracedCorpus, tree: Path, env: dict[str, str], out: Path, classes: list[str]
) -> tuple[list[tuple[str, int, str, int]], dict[str, list[int]], dict[str, list[object]]]:
    env = {**env, "PATCHSTREAM_TRACE_AUTOLOAD": str(tree / "vendor" / "autoload.php")}
    php = ["php", "-d", "xdebug.mode=trace,coverage", "-d", "xdebug.trace_format=1", "-d",
           "memory_limit=4G", "-d", f"auto_prepend_file={HERE / 'php_trace.php'}"]  # fmt: skip
    runner = "/usr/bin/phpunit" if corpus.run[0] == "phpunit" else corpus.run[0]
    subprocess.run([*php, runner, *corpus.run[1:]], cwd=tree, env=env, capture_output=True,
                   timeout=1800)  # fmt: skip
    sites: set[tuple[str, str, int]] = set()
    trace = Path(f"{out}.trace")
    with trace.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            cells = line.split("\t")
            # level, call number, 0 (entry), time, memory, name, user-defined, file, site, line
            entry = len(cells) >= 10 and cells[2] == "0" and cells[6] == "1"
            if entry and not cells[5].startswith("{") and cells[5] not in _PHP_INCLUDES:
                sites.add((cells[5], cells[8], int(cells[9])))
    trace.unlink()
    names = sorted({name for name, _, _ in sites})
    asked = json.dumps({"traced": names, "classes": classes})
    resolved = json.loads(subprocess.run(["php", str(HERE / "php_resolve.php")], input=asked,
                                         capture_output=True, text=True, env=env,
                                         check=True).stdout)  # fmt: skip
    where = dict(zip(names, resolved["traced"], strict=True))
    calls = [(path, line, *where[name]) for name, path, line in sites if where.get(name)]
    ran = json.loads(Path(f"{out}.lines.json").read_text())["lines"]
    return calls, ran, resolved["roots"]


_PHP_INCLUDES = frozenset({"require", "require_once", "include", "include_once"})


@dataclass
class Definitions:
    """patchstream's definitions of the measured files, by id, name and position."""

    names: dict[str, str]  # symbol id -> full name
    at: dict[tuple[str, int], str]  # (path, first line) -> callable symbol id
    spans: dict[str, tuple[str, int, int]]  # callable symbol id -> (path, first, last line)
    callables: dict[str, list[tuple[int, int, str]]]  # path -> (first, last, id)
    modules: dict[str, str]  # path -> the file's module symbol id
    parents: dict[str, str]  # symbol id -> parent id


def definitions(states: dict[str, FileState]) -> Definitions:
    found = Definitions({}, {}, {}, defaultdict(list), {}, {})
    for path, state in states.items():
        # PHP's names start with their namespace; Ruby's are whole (a class may be reopened
        # in many files: one name).
        package = (
            ""
            if state.language == "ruby"
            else next((s.qualified_name for s in state.symbols if s.kind is SymbolKind.MODULE), "")
        )
        for symbol in state.symbols:
            if symbol.kind is SymbolKind.MODULE:
                found.modules[path] = symbol.id
            name = f"{package}.{symbol.qualified_name}".lstrip(".")
            found.names[symbol.id] = name
            if symbol.parent_id:
                found.parents[symbol.id] = symbol.parent_id
            if symbol.kind in _CALLABLE:
                found.at.setdefault((path, symbol.start_line), symbol.id)
                found.spans[symbol.id] = (path, symbol.start_line, symbol.end_line)
                found.callables[path].append((symbol.start_line, symbol.end_line, symbol.id))
    return found


def _caller(defs: Definitions, path: str, line: int) -> str | None:
    """The innermost function or class around ``line`` (extraction's rule for a call's
    source), else the file's module."""
    best: tuple[int, int, str] | None = None
    for first, last, sid in defs.callables.get(path, ()):
        if first <= line <= last and (best is None or first >= best[0]):
            best = (first, last, sid)
    return best[2] if best is not None else defs.modules.get(path)


def _as_class(defs: Definitions, sid: str) -> str:
    """A constructor is its class: ``new`` builds the class."""
    name = defs.names.get(sid, "")
    if name.rsplit(".", 1)[-1] in _CONSTRUCTORS and sid in defs.parents:
        return defs.parents[sid]
    return sid


def reference_edges(defs: Definitions, trace: Trace) -> tuple[set[Edge], int]:
    """The traced calls written as calls, as edges; and how many traced calls were not
    (their line does not name the method: ``$this->{'p' . $type}()``, ``send(name)``, a
    string conversion calling ``__toString``), which no reading of the source can bind."""
    edges, unwritten = set(), 0
    for site, line, callee_path, callee_line in trace.calls:
        caller = _caller(defs, site, line)
        callee = defs.at.get((callee_path, callee_line))
        if caller is None or callee is None:
            continue
        name = defs.names[callee].rsplit(".", 1)[-1]
        words = _CONSTRUCTION if name in _CONSTRUCTORS or callee not in defs.parents else (name,)
        if not _names(site, line, words):
            unwritten += 1
            continue
        root = trace.roots.get((callee_path, callee_line))
        callee = defs.at.get(root, callee) if root else callee
        edges.add((defs.names[caller], defs.names[_as_class(defs, callee)]))
    return edges, unwritten


# What a line that builds an object (or runs its base's constructor) writes.
_CONSTRUCTION = ("new", "__construct", "super", "initialize", "parent")


def _names(path: str, line: int, words: tuple[str, ...]) -> bool:
    lines = _lines(path)
    if not 0 < line <= len(lines):
        return False
    return any(_word(word).search(lines[line - 1]) for word in words)


@cache
def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?!\w)")


def compared_edges(
    states: dict[str, FileState], ours: dict[Edge, int], trace: Trace, language: str
) -> tuple[set[Edge], dict[Edge, int], dict[Edge, int]]:
    """The traced edges; patchstream's edges (recall's side) and those of them the run
    could have shown (precision's side), with their ranks; all as full names."""
    defs = definitions(states)
    reference, _ = reference_edges(defs, trace)
    owners = _constructor_owners(states, defs, _CONSTRUCTOR[language])
    named: dict[Edge, int] = {}
    checkable: dict[Edge, int] = {}
    for (src, dst), rank in ours.items():
        if src not in defs.names or dst not in defs.names:
            continue
        written = defs.names[dst].rsplit(".", 1)[-1]
        span = defs.spans.get(dst)
        root = trace.roots.get(span[:2]) if span is not None else None
        target: str | None = _as_class(defs, defs.at.get(root, dst) if root else dst)
        if target in owners:  # PHP: the constructor that runs, if any
            target = owners[target]
        if target is None:
            continue  # no constructor: nothing runs that a trace could see
        edge = (defs.names[src], defs.names[target])
        named[edge] = min(rank, named.get(edge, rank))
        if _ran_naming(defs, trace, src, written):
            checkable[edge] = min(rank, checkable.get(edge, rank))
    return reference, named, checkable


def _ran_naming(defs: Definitions, trace: Trace, caller: str, name: str) -> bool:
    """Whether a line of ``caller`` that ran names ``name`` as a word."""
    span = defs.spans.get(caller)
    if span is None:
        return False
    path, first, last = span
    ran = trace.ran.get(path)
    if not ran:
        return False
    lines = _lines(path)
    word = _word(name)
    return any(word.search(lines[n - 1]) for n in ran if first <= n <= last and n <= len(lines))


_TEXTS: dict[str, list[str]] = {}
_TREE: list[Path] = []


def _lines(path: str) -> list[str]:
    if path not in _TEXTS:
        _TEXTS[path] = (_TREE[0] / path).read_text(errors="replace").splitlines()
    return _TEXTS[path]


def remember_tree(tree: Path) -> None:
    """The tree the states' paths are relative to (for the lines that ran)."""
    _TREE[:] = [tree]
    _TEXTS.clear()


def _written_names(module: str | None, name: str, namespace: str) -> list[str]:
    """The full names a base's reference may mean: PHP's as written, or in the file's
    namespace; Ruby's from where it is written outward (``<rb>.A.B`` + ``N``: A.B.N, A.N, N)."""
    if module is not None and module.startswith("<rb>"):
        context = module.split("+", 1)[0].removeprefix("<rb>").strip(".").split(".")
        return [".".join([*context[:cut], name]).strip(".") for cut in range(len(context), -1, -1)]
    return [f"{module or ''}.{name}".strip("."), f"{namespace}.{name}"]


def _constructor_owners(
    states: dict[str, FileState], defs: Definitions, constructor: str
) -> dict[str, str | None]:
    """Each class -> the class whose constructor runs when it is built (its own, else its
    nearest base's of the measured files), or None: no constructor of the project runs, and
    a trace shows nothing."""
    classes = {s.id for st in states.values() for s in st.symbols if s.kind is SymbolKind.CLASS}
    by_name = {defs.names[c]: c for c in classes}
    own = {defs.parents[sid] for sid, name in defs.names.items()
           if name.rsplit(".", 1)[-1] == constructor and sid in defs.parents}  # fmt: skip
    extends: dict[str, str] = {}
    for state in states.values():
        namespace = next((s.qualified_name for s in state.symbols
                          if s.kind is SymbolKind.MODULE), "")  # fmt: skip
        for edge in state.edges:
            if edge.type is not EdgeType.INHERITS_FROM or edge.src not in classes:
                continue
            if edge.ref is None:
                target = edge.dst
            else:
                target = next(
                    (
                        by_name[n]
                        for n in _written_names(edge.ref.module, edge.ref.name, namespace)
                        if n in by_name
                    ),
                    "",
                )
            if target in classes and edge.src not in extends:
                extends[edge.src] = target
    owners: dict[str, str | None] = {}
    for cls in classes:
        current: str | None = cls
        for _ in range(8):
            if current is None or current in own:
                break
            current = extends.get(current)
        owners[cls] = current if current in own else None
    return owners
