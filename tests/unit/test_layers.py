"""Imports only run down the floors: a module never imports one of a higher floor, so a
lower layer (contracts, parsing, stores) can be reasoned about, and reused, without the ones
built on it. Function-level imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "patchstream"

# Lowest first. Within a floor, modules may import each other.
FLOORS = [
    {"__init__", "errors", "logs", "text_flags", "client", "pacing", "config", "http", "system"},
    {"schemas"},
    {"parsing", "embedders"},
    {"stores", "bus"},
    {"metrics"},
    {"streams"},
    {"producers", "consumers", "agent", "tracing"},
    {"indexing", "query"},
    {"embedded", "cli", "testing"},
]  # fmt: skip
FLOOR = {name: level for level, names in enumerate(FLOORS) for name in names}


def _part(module_path: Path) -> str:
    rel = module_path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_every_part_of_the_package_has_a_floor() -> None:
    parts = {_part(p) for p in PACKAGE.rglob("*.py")}
    assert parts <= set(FLOOR), f"give these a floor: {sorted(parts - set(FLOOR))}"


def test_no_module_imports_a_higher_floor() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = _part(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module):
                continue
            names = node.module.split(".")
            if names[0] != "patchstream" or len(names) < 2:
                continue
            target = names[1]
            if FLOOR.get(target, -1) > FLOOR[part]:
                upward.append(f"{path.relative_to(PACKAGE)} -> {node.module}")
    assert upward == []


def _imports(path: Path) -> set[str]:
    """The ``patchstream.*`` modules a module imports, function-level imports included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        module = node.module if isinstance(node, ast.ImportFrom) else None
        if module and (module == "patchstream" or module.startswith("patchstream.")):
            assert isinstance(node, ast.ImportFrom)
            found.add(module)  # and its names, which may be modules of a package
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def test_the_lowest_floor_imports_in_no_circle() -> None:
    """Issue #52: settings -> client_profile -> settings (and stack_registry) was a circle,
    closed by imports inside functions; the CLI's modes now register with settings."""
    lowest = [p for p in PACKAGE.glob("*.py")]
    lowest += [p for name in ("config", "http", "system") for p in (PACKAGE / name).glob("*.py")]
    modules = {".".join(("patchstream", *p.relative_to(PACKAGE).with_suffix("").parts))
               .removesuffix(".__init__"): p for p in lowest}  # fmt: skip
    graph = {name: _imports(path) & set(modules) for name, path in modules.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n}))
                   for n in graph[start])  # fmt: skip

    circles = sorted(name for name in graph if reaches(name, name, {name}))
    assert circles == []
