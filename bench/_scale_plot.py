"""The growth bench's plot: memory against files on log-log axes, as a plain SVG (no plotting
library: the bench runs with the project's own dependencies)."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

PLOT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "scale.svg"
# What the plot draws, in this order; a series the run lacks is left out.
LINES = [
    ("stack peak MiB", "the stack, peak at one time", "#d62728"),
    ("stack peak PSS MiB", "the stack, peak PSS (shared pages once)", "#bcbd22"),
    ("stack steady MiB", "the stack, steady", "#ff9896"),
    ("peak MiB milvus", "Milvus Lite, peak", "#1f77b4"),
    ("peak MiB query", "query service, peak", "#2ca02c"),
    ("peak MiB falkordb", "FalkorDB, peak", "#9467bd"),
    ("peak MiB tansu", "Tansu (broker), peak", "#8c564b"),
    ("peak MiB parse-0", "a parse worker, peak", "#e377c2"),
    ("disk MiB (stores)", "the stores on disk", "#7f7f7f"),
]
W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 440, 70, 250, 30, 50


def _log_ticks(low: float, high: float) -> list[float]:
    ticks = []
    for exp in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mult in (1, 2, 5):
            value = mult * 10**exp
            if low <= value <= high:
                ticks.append(float(value))
    return ticks


def write_plot(series: dict[str, list[tuple[float, float]]], path: Path, machine: str) -> None:
    drawn = [(key, label, colour) for key, label, colour in LINES if len(series.get(key, [])) > 1]
    points = [p for key, _, _ in drawn for p in series[key]]
    if not points:
        return
    x_low, x_high = min(x for x, _ in points) / 1.2, max(x for x, _ in points) * 1.2
    y_low, y_high = min(y for _, y in points) / 1.5, max(y for _, y in points) * 1.5

    def px(x: float) -> float:
        span = math.log(x_high) - math.log(x_low)
        return LEFT + (math.log(x) - math.log(x_low)) / span * (W - LEFT - RIGHT)

    def py(y: float) -> float:
        span = math.log(y_high) - math.log(y_low)
        return H - BOTTOM - (math.log(y) - math.log(y_low)) / span * (H - TOP - BOTTOM)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{LEFT}" y="18" font-size="14">Memory against files (log-log), '
           f'{escape(machine)}</text>']  # fmt: skip
    for tick in _log_ticks(x_low, x_high):
        out.append(f'<line x1="{px(tick):.1f}" y1="{TOP}" x2="{px(tick):.1f}" '
                   f'y2="{H - BOTTOM}" stroke="#eee"/>')  # fmt: skip
        out.append(f'<text x="{px(tick):.1f}" y="{H - BOTTOM + 16}" '
                   f'text-anchor="middle">{tick:,.0f}</text>')  # fmt: skip
    for tick in _log_ticks(y_low, y_high):
        out.append(f'<line x1="{LEFT}" y1="{py(tick):.1f}" x2="{W - RIGHT}" '
                   f'y2="{py(tick):.1f}" stroke="#eee"/>')  # fmt: skip
        out.append(f'<text x="{LEFT - 6}" y="{py(tick) + 4:.1f}" '
                   f'text-anchor="end">{tick:,.0f}</text>')  # fmt: skip
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">'
               "files indexed</text>")  # fmt: skip
    out.append(f'<text x="16" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2})">MiB</text>')  # fmt: skip
    for row, (key, label, colour) in enumerate(drawn):
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(series[key]))
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" '
                   'stroke-width="2"/>')  # fmt: skip
        for x, y in series[key]:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
        ly = TOP + 14 + row * 20
        out.append(f'<line x1="{W - RIGHT + 14}" y1="{ly - 4}" x2="{W - RIGHT + 34}" '
                   f'y2="{ly - 4}" stroke="{colour}" stroke-width="2"/>')  # fmt: skip
        out.append(f'<text x="{W - RIGHT + 40}" y="{ly}">{escape(label)}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
