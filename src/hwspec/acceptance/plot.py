"""`hwspec diff PLATFORM RESULT... --plot FILE`: each run's measured busbw over message size
against its expected figure and band, the picture engineers read nccl-tests by; a copy run's
measured rate per GPU (or pair) against its expected one.

One panel per run, log-2 sizes on x, GB/s on y: the expected busbw as a line, the band (low to
expected, judged sizes only) shaded, the datasheet bound dotted, the measurement as markers
(red where below the band). matplotlib is optional (`pip install 'hwspec[plot]'`); SVG output
is deterministic (fixed hash salt, no date), written atomically.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from hwspec.acceptance.compare import Compared, Outcome
from hwspec.acceptance.expected import size_text
from hwspec.perf.plot import FORMATS, PlotUnavailable

MAX_PANELS = 24
"""Runs drawn in one picture; the rest are left out (the report lists them all)."""


def panels(outcome: Outcome) -> list[list[Compared]]:
    """The compared sizes grouped by run (file, test and the run's first line), in reading order."""
    runs: dict[tuple[str, str, int], list[Compared]] = {}
    for c in outcome.compared:
        runs.setdefault((c.where.file, c.test, c.where.line if c.bytes is None else 0), []).append(c)
    return list(runs.values())


def render(outcome: Outcome, path: Path) -> None:
    """Draw `outcome` to `path` (.svg or .png). Raises PlotUnavailable without matplotlib,
    ValueError for another suffix or nothing to draw, OSError when it cannot be written."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"{path}: plot files end in .svg or .png")
    runs = panels(outcome)[:MAX_PANELS]
    if not runs:
        raise ValueError("no size was compared: nothing to draw")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("plotting needs matplotlib: pip install 'hwspec[plot]' (or pip install matplotlib)") from None
    from hwspec.atomic import write_atomic_bytes

    columns = 2 if len(runs) > 1 else 1
    rows = math.ceil(len(runs) / columns)
    with matplotlib.rc_context({"svg.hashsalt": "hwspec", "svg.fonttype": "path", "font.size": 8}):
        fig, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 3.6 * rows), squeeze=False)
        for ax, run in zip(axes.flat, runs):
            (_copies if run[0].bytes is None else _sizes)(ax, run)
        for ax in list(axes.flat)[len(runs):]:
            ax.set_visible(False)
        fig.tight_layout()
        buffer = io.BytesIO()
        suffix = path.suffix.lower()
        metadata = {"Date": None, "Creator": None} if suffix == ".svg" else {"Software": None}
        fig.savefig(buffer, format=suffix[1:], metadata=metadata, dpi=150)
        plt.close(fig)
    write_atomic_bytes(path, buffer.getvalue())


def _title(run: list[Compared]) -> str:
    first = run[0]
    hosts = f" ({', '.join(first.hosts[:2])}{', ...' if len(first.hosts) > 2 else ''})" if first.hosts else ""
    return f"{first.test}: {first.nodes} node(s){hosts} x {first.gpus_per_node}\n{Path(first.where.file).name}"


def _sizes(ax: Any, run: list[Compared]) -> None:
    x = [c.bytes or 1 for c in run]
    gb = 1e9
    expected = [(c.figure.busbw or math.nan) / gb for c in run]
    high = [(c.figure.high or math.nan) / gb for c in run]
    low = [(c.figure.low if c.figure.low is not None else math.nan) / gb for c in run]
    ax.plot(x, expected, color="#1f77b4", linewidth=1.5, label="expected")
    ax.fill_between(x, low, expected, color="#1f77b4", alpha=0.2, linewidth=0, label="band (judged sizes)")
    ax.plot(x, high, color="#7f7f7f", linestyle=":", linewidth=1, label="datasheet bound")
    below = [c.verdict == "below" for c in run]
    measured = [c.measured / gb for c in run]
    ax.scatter([v for v, b in zip(x, below) if not b], [m for m, b in zip(measured, below) if not b],
               s=12, color="black", zorder=3, label="measured")
    if any(below):
        ax.scatter([v for v, b in zip(x, below) if b], [m for m, b in zip(measured, below) if b],
                   s=16, color="#d62728", zorder=4, label="below the band")
    ax.set_xscale("log", base=2)
    ticks = [v for i, v in enumerate(x) if i % max(1, len(x) // 6) == 0]
    ax.set_xticks(ticks, [size_text(v) for v in ticks])
    ax.set_xlabel("message size")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(_title(run))
    ax.grid(True, linewidth=0.3)
    ax.legend(loc="upper left", fontsize=7)


def _copies(ax: Any, run: list[Compared]) -> None:
    labels = ["-".join(c.pair or ("", "")) for c in run]
    positions = range(len(run))
    ax.bar(positions, [c.measured / 1e9 for c in run], width=0.6,
           color=["#d62728" if c.verdict == "below" else "#7f7f7f" for c in run], label="measured")
    ax.plot(positions, [(c.figure.busbw or math.nan) / 1e9 for c in run], color="#1f77b4", marker="_", linestyle="none",
            markersize=14, label="expected")
    ax.plot(positions, [(c.figure.low if c.figure.low is not None else math.nan) / 1e9 for c in run], color="#1f77b4",
            marker="_", linestyle="none", markersize=10, alpha=0.5, label="band's low edge")
    step = max(1, len(run) // 16)
    ax.set_xticks(list(positions)[::step], labels[::step], rotation=60, fontsize=6)
    ax.set_ylabel("GB/s")
    ax.set_title(_title(run))
    ax.legend(loc="lower right", fontsize=7)
