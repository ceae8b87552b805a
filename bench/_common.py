"""Shared bench helpers: machine description, corpora from installed packages, README table."""

from __future__ import annotations

import importlib
import os
import platform
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"
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
    """Source tree of an installed package (real code nobody here wrote)."""
    module = importlib.import_module(name)
    return Path(module.__file__ or "").parent


def corpus_files(roots: list[Path], suffixes: tuple[str, ...] = (".py",)) -> list[Path]:
    return sorted(
        p for root in roots for p in root.rglob("*") if p.suffix in suffixes and p.is_file()
    )


def copy_corpus(packages: list[str], into: Path) -> Path:
    """Copy the source trees of installed packages into ``into`` (a repository to index)."""
    import shutil

    for name in packages:
        shutil.copytree(package_tree(name), into / name,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return into


def stack_settings(tmp: Path, topic_prefix: str, **sections: Any) -> Any:
    """Settings for a bench's own embedded stack: every port free, data in ``tmp``."""
    from patchstream.embedded.services import free_port
    from patchstream.settings import (
        EmbeddedSettings,
        GatewaySettings,
        KafkaSettings,
        QuerySettings,
        Settings,
    )

    defaults: dict[str, Any] = {
        "embedded": EmbeddedSettings(data_dir=str(tmp / "stack"), kafka_port=free_port(),
                                     falkordb_port=free_port(), milvus_port=free_port()),
        "kafka": KafkaSettings(topic_prefix=topic_prefix),
        "query": QuerySettings(port=free_port(), api_keys={"bench-key": "bench"}),
        "gateway": GatewaySettings(port=free_port()),
    }  # fmt: skip
    return Settings(**{**defaults, **sections})


def print_rows(rows: dict[str, str]) -> None:
    """The figures as an aligned two-column table."""
    width = max(map(len, rows))
    for name, value in rows.items():
        print(f"{name:<{width}}  {value}")


def update_readme_row(key: str, command: str, figures: str) -> None:
    """Replace (or add) the README results row whose first cell is ``key``."""
    text = README.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    rows = [line for line in block.strip().splitlines() if line.startswith("|")]
    header = rows[:2]
    body = [r for r in rows[2:] if not re.match(rf"^\|\s*{re.escape(key)}\s*\|", r)]
    today = datetime.now(UTC).date().isoformat()
    body.append(f"| {key} | {today} | {machine()} | `{command}` | {figures} |")
    body.sort()
    new_block = "\n".join([*header, *body])
    README.write_text(f"{head}{BEGIN}\n{new_block}\n{END}{tail}", encoding="utf-8")
