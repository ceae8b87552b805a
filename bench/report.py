"""Prints the results table (docs/benchmarks): the latest figures of every bench, one row each.

python bench/report.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BEGIN, END, RESULTS


def main() -> None:
    block = RESULTS.read_text(encoding="utf-8").split(BEGIN, 1)[1].split(END, 1)[0]
    for line in block.strip().splitlines()[2:]:
        bench, date, machine, command, figures = (c.strip() for c in line.strip("| ").split("|"))
        print(f"== {bench}  ({date}, {machine}, {command})")
        for figure in figures.split("; "):
            print(f"   {figure}")


if __name__ == "__main__":
    main()
