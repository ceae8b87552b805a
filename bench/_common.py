"""Shared bench helpers: machine description, corpora from installed packages, the results table."""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# The full results table lives on the docs site; the README shows its headline rows.
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "index.md"
BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"


def machine() -> str:
    try:
        meminfo = Path("/proc/meminfo").read_text().split("\n", 1)[0]
        mem_gib = int(meminfo.split()[1]) / 1024 / 1024
    except (OSError, IndexError, ValueError):
        mem_gib = 0.0
    arch, py = platform.machine(), platform.python_version()
    return f"{os.cpu_count()} cores, {mem_gib:.0f} GiB, {arch}, py{py}"


def package_tree(name: str) -> Path:
    """Source tree of an installed package (real code nobody here wrote), found without
    importing it (importing setuptools after torch trips over distutils)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not an installed package")
    return Path(next(iter(spec.submodule_search_locations)))


def corpus_files(roots: list[Path], suffixes: tuple[str, ...] = (".py",)) -> list[Path]:
    return sorted(
        p for root in roots for p in root.rglob("*") if p.suffix in suffixes and p.is_file()
    )


# Only source text is copied: a package tree also holds shared libraries (torch's are GBs).
SOURCE_SUFFIXES = {".py", ".pyi", ".md", ".rst", ".ts", ".tsx", ".js", ".mjs", ".go", ".java",
                   ".rs"}  # fmt: skip

# Counted in a corpus's size; never copied out of a PyPI package.
C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".kt", ".scala", ".php", ".rb", ".swift")

# Named corpora: real code nobody here wrote, available without the internet.
PYPI_CORPORA = {
    "small": ["pydantic"],  # about 100 Python files
    "medium": ["scipy"],  # about 1,000
    "large": ["transformers", "torch", "networkx"],  # 5,000 and more
}
NPM_CORPUS = ("rxjs", "7.8.2", "src")  # package, version, source folder: TypeScript
CORPUS_CACHE = Path(__file__).resolve().parent / ".corpora"


def _source_only(directory: str, names: list[str]) -> set[str]:
    return {
        n for n in names
        if n == "__pycache__" or (Path(n).suffix and Path(n).suffix not in SOURCE_SUFFIXES
                                  and not Path(directory, n).is_dir())
    }  # fmt: skip


def copy_corpus(packages: list[str], into: Path) -> Path:
    """Copy the source trees of installed packages into ``into`` (a repository to index)."""
    import shutil

    for name in packages:
        shutil.copytree(package_tree(name), into / name, ignore=_source_only)
    return into


def npm_tree(corpus: tuple[str, str, str] = NPM_CORPUS) -> Path:
    """An npm package's source folder (``corpus``: package, version, folder; the TypeScript
    corpus by default), fetched once with ``npm pack`` into bench/.corpora."""
    import subprocess
    import tarfile

    package, version, folder = corpus
    target = CORPUS_CACHE / f"{package}-{version}"
    if not (target / folder).is_dir():
        CORPUS_CACHE.mkdir(exist_ok=True)
        subprocess.run(["npm", "pack", f"{package}@{version}", "--silent",
                        "--pack-destination", str(CORPUS_CACHE)], check=True,
                       capture_output=True)  # fmt: skip
        with tarfile.open(CORPUS_CACHE / f"{package}-{version}.tgz") as archive:
            archive.extractall(target, filter="data")
        (target / "package").rename(target / "tree")
        (target / "tree" / folder).rename(target / folder)
    return target / folder


def build_corpus(name: str, into: Path) -> Path:
    """A named corpus (``small``, ``medium``, ``large``, ``npm``) copied into ``into``."""
    import shutil

    if name == "npm":
        shutil.copytree(npm_tree(), into / NPM_CORPUS[0])
        return into
    if name == "c":  # lua and zlib at their pinned commits (bench/_c_reference.py)
        from _c_reference import C_CORPORA, c_tree

        for corpus in ("lua", "zlib"):
            shutil.copytree(c_tree(C_CORPORA[corpus]), into / corpus)
        return into
    if name == "cpp":  # leveldb and yaml-cpp at their pinned commits (bench/_cpp_reference.py)
        from _cpp_reference import CPP_CORPORA, cpp_tree

        for corpus in ("leveldb", "yaml-cpp"):
            shutil.copytree(cpp_tree(CPP_CORPORA[corpus]), into / corpus)
        return into
    if name == "csharp":  # dnlib and dbus-sharp, Debian's tarballs (bench/_csharp_reference.py)
        from _csharp_reference import CSHARP_CORPORA, csharp_tree

        for corpus in ("dnlib", "dbus-sharp"):
            shutil.copytree(csharp_tree(CSHARP_CORPORA[corpus]), into / corpus)
        return into
    if name == "kotlin":  # clikt and kotlinpoet at pinned commits (bench/_kotlin_reference.py)
        from _kotlin_reference import KOTLIN_CORPORA, kotlin_tree

        for corpus in ("clikt", "kotlinpoet"):
            shutil.copytree(kotlin_tree(KOTLIN_CORPORA[corpus]), into / corpus)
        return into
    if name == "scala":  # scala-swing and parser-combinators (bench/_kotlin_reference.py)
        from _kotlin_reference import SCALA_CORPORA, kotlin_tree

        for corpus in ("scala-swing", "parser-combinators"):
            shutil.copytree(kotlin_tree(SCALA_CORPORA[corpus]), into / corpus)
        return into
    if name in ("php", "ruby"):  # the traced corpora's sources (bench/_dynamic_reference.py)
        from _dynamic_reference import PHP_CORPORA, RUBY_CORPORA, source_files, traced_tree

        for corpus in (PHP_CORPORA if name == "php" else RUBY_CORPORA).values():
            tree = traced_tree(corpus)
            for path in source_files(corpus, tree):
                copied = into / corpus.name / path.relative_to(tree.resolve())
                copied.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copied)
        return into
    if name == "swift":  # swift-argument-parser's Sources/ (bench/_swift_reference.py)
        from _swift_reference import swift_tree

        shutil.copytree(swift_tree(), into / "swift-argument-parser")
        return into
    if name not in PYPI_CORPORA:
        raise SystemExit(f"unknown corpus {name!r}: small, medium, large, npm, c, cpp, csharp, "
                         "kotlin, scala, php, ruby or swift")  # fmt: skip
    return copy_corpus(PYPI_CORPORA[name], into)


def corpus_label(name: str) -> str:
    if name == "npm":
        return f"npm {NPM_CORPUS[0]}@{NPM_CORPUS[1]} {NPM_CORPUS[2]}/"
    if name == "c":
        return "c: lua+zlib (C, whole trees at their pinned commits)"
    if name == "cpp":
        return "cpp: leveldb+yaml-cpp (C++, whole trees at their pinned commits)"
    if name == "csharp":
        return "csharp: dnlib 2.1+dbus-sharp 0.8.1 (C#, Debian's upstream tarballs, src/)"
    if name == "kotlin":
        return "kotlin: clikt+kotlinpoet (Kotlin, main sources at pinned 2019 commits)"
    if name == "scala":
        return "scala: scala-swing 2.0.3+scala-parser-combinators 1.0.7 (Scala, main sources)"
    if name == "php":
        return "php: PHP-Parser 4.19.4+symfony/yaml 7.0.3 (PHP, sources without tests)"
    if name == "ruby":
        return "ruby: liquid 5.4.0+rake 13.2.1 (Ruby, lib/)"
    if name == "swift":
        return "swift: swift-argument-parser 1.5.0 (Swift, Sources/)"
    return f"{name}: " + "+".join(PYPI_CORPORA[name])


def corpus_size(root: Path) -> tuple[int, int, int]:
    """(files, lines, bytes) of the source files under ``root``."""
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix in (*SOURCE_SUFFIXES,
             *C_SUFFIXES)]  # fmt: skip
    data = [p.read_bytes() for p in files]
    return len(files), sum(d.count(b"\n") for d in data), sum(len(d) for d in data)


def _process_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return children


def _per_process(stack: Any, measure: Any) -> dict[str, float]:
    """``measure(pid)`` of each process of a running stack, its children added to it."""
    children = _process_children()

    def tree(pid: int) -> float:
        return float(measure(pid)) + sum(tree(child) for child in children.get(pid, []))

    found = {}
    for service in stack.services:
        found[service.name] = tree(service.process.pid)
    for worker in stack.workers:
        if worker.process is not None:
            found[worker.name] = tree(worker.process.pid)
    return found


def _status_mib(pid: int, field: str) -> float:
    """A memory field of ``/proc/PID/status`` (``VmHWM``, ``VmRSS``) in MiB; 0 once gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _pss_mib(pid: int) -> float:
    """Proportional set size (``/proc/PID/smaps_rollup``) in MiB, 0 once gone: each shared
    page counted once over the processes sharing it. A fork that shares its parent's pages
    (FalkorDB rewriting its log) reads twice its parent in RSS, once in PSS."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mib(stack: Any) -> dict[str, float]:
    """Peak resident memory (VmHWM) of each process of a running stack, in MiB; a process's
    children (Milvus Lite's server, say) are added to it, an upper bound of their joint peak."""
    found = _per_process(stack, lambda pid: _status_mib(pid, "VmHWM"))
    import resource

    found["bench driver (indexer)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return found


class StackMemory:
    """The stack's resident memory summed over its processes, sampled every ``interval_s``
    between ``start()`` and ``stop()``: ``peak_mib`` is the most it held at one time, what the
    machine had to give it. The sum of each process's own peak
    (``peak_rss_mib``) is an upper bound of it: the processes peak at different moments.
    ``peak_pss_mib`` is the same in proportional set size: pages two processes share (a
    fork's copy-on-write pages) counted once, what the machine held."""

    def __init__(self, stack: Any, interval_s: float = 0.5) -> None:
        import threading

        self.stack, self.interval_s = stack, interval_s
        self.peak_mib = 0.0
        self.peak_pss_mib = 0.0
        # Each process's most, children included: VmHWM forgets a child that is gone (a parse
        # jail replaced after a burst takes its peak with it).
        self.by_process: dict[str, float] = {}
        # Each process's PSS at the moment the stack's PSS peaked: where the peak went.
        self.pss_at_peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            now = _per_process(self.stack, lambda pid: _status_mib(pid, "VmRSS"))
            self.peak_mib = max(self.peak_mib, sum(now.values()))
            pss = _per_process(self.stack, _pss_mib)
            if sum(pss.values()) > self.peak_pss_mib:
                self.peak_pss_mib, self.pss_at_peak = sum(pss.values()), pss
            for name, mib in now.items():
                self.by_process[name] = max(self.by_process.get(name, 0.0), mib)

    def start(self) -> StackMemory:
        self._thread.start()
        return self

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_mib


def cpu_seconds(stack: Any) -> dict[str, float]:
    """CPU seconds (user + system) each process of a running stack has used so far, with its
    children's, living or reaped."""
    import os

    tick = os.sysconf("SC_CLK_TCK")

    def used(pid: int) -> float:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            # its own time, and that of its children it has reaped (a replaced parse jail)
            return sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick
        except (OSError, IndexError, ValueError):
            return 0.0

    return _per_process(stack, used)


def index_corpus(stack: Any, corpus: Path) -> Any:
    """``corpus`` indexed through a running stack's pipeline as repository ``corpus`` of
    tenant ``bench``; the bench exits when the index does not complete."""
    import asyncio

    from patchstream.indexing.run import index_directory

    summary = asyncio.run(index_directory(stack.settings, corpus, repo="corpus", tenant="bench",
                                          progress=False))  # fmt: skip
    if not summary.complete:
        raise SystemExit(f"the index did not complete: {summary.as_dict()}")
    return summary


def format_memory(peaks: dict[str, float]) -> str:
    return ", ".join(f"{name} {mib:.0f}" for name, mib in peaks.items())


def stack_settings(tmp: Path, topic_prefix: str, **sections: Any) -> Any:
    """Settings for a bench's own embedded stack: every port free, data in ``tmp``."""
    from patchstream.config.settings import (
        EmbeddedSettings,
        GatewaySettings,
        KafkaSettings,
        QuerySettings,
        Settings,
    )
    from patchstream.embedded.services import free_port

    defaults: dict[str, Any] = {
        "embedded": EmbeddedSettings(data_dir=str(tmp / "stack"), kafka_port=free_port(),
                                     falkordb_port=free_port(), milvus_port=free_port(),
                                     metrics_port=0),
        "kafka": KafkaSettings(topic_prefix=topic_prefix),
        # Benches measure the services, not the per-key limits: those are off.
        "query": QuerySettings(port=free_port(), api_keys={"bench-key": "bench"},
                               rate_per_key=0),
        "gateway": GatewaySettings(port=free_port(), rate_per_key=0),
    }  # fmt: skip
    return Settings(**{**defaults, **sections})


def print_rows(rows: dict[str, str]) -> None:
    """The figures as an aligned two-column table."""
    width = max(map(len, rows))
    for name, value in rows.items():
        print(f"{name:<{width}}  {value}")


def update_results_row(key: str, command: str, figures: str) -> None:
    """Replace (or add) the results row (docs/benchmarks) whose first cell is ``key``."""
    text = RESULTS.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{RESULTS} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    rows = [line for line in block.strip().splitlines() if line.startswith("|")]
    header = rows[:2]
    body = [r for r in rows[2:] if not re.match(rf"^\|\s*{re.escape(key)}\s*\|", r)]
    today = datetime.now(UTC).date().isoformat()
    body.append(f"| {key} | {today} | {machine()} | `{command}` | {figures} |")
    body.sort()
    new_block = "\n".join([*header, *body])
    RESULTS.write_text(f"{head}{BEGIN}\n{new_block}\n{END}{tail}", encoding="utf-8")
