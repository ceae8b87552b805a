"""Imports only run down the floors: a module never imports one of a higher floor, so a
lower layer (contracts, parsing, stores) can be reasoned about, and reused, without the ones
built on it. Function-level imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "patchstream"

# Lowest first. Within a floor, modules may import each other.
FLOORS = [
    {"__init__", "errors", "settings", "query_settings", "logs", "http_errors", "http_security",
     "http_limits", "git_safety", "text_flags", "client", "client_profile", "procfs", "pacing",
     "stack_addresses", "stack_registry", "user_records"},
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
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "patchstream":
                found |= {f"patchstream.{alias.name}" for alias in node.names}
            elif node.module.startswith("patchstream."):
                found.add(node.module)
    return found


def test_the_modules_at_the_package_root_import_in_no_circle() -> None:
    """Issue #52: settings -> client_profile -> settings (and stack_registry) was a circle,
    closed by imports inside functions; the CLI's modes now register with settings."""
    root = {p.stem: p for p in PACKAGE.glob("*.py")}
    graph = {name: {m.split(".")[1] for m in _imports(path)} & set(root)
             for name, path in root.items()}  # fmt: skip

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n}))
                   for n in graph[start])  # fmt: skip

    circles = sorted(name for name in graph if reaches(name, name, {name}))
    assert circles == []
