"""Stacked-bar chart of estimates: one bar per platform, one segment per term (serial time), a
marker at the overlapped time (the busiest resource). SVG or PNG by the file's suffix.

matplotlib is an optional dependency (`pip install 'hwspec[plot]'`); `PlotUnavailable` says so
when it is missing. SVG output is deterministic: fixed hash salt, no date, no software tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hwspec.perf.estimate import TERMS

FORMATS = (".svg", ".png")
COLORS = {
    "embedding_fwd": "#1f77b4", "embedding_bwd": "#aec7e8", "mlp_fwd": "#2ca02c", "mlp_bwd": "#98df8a",
    "input_alltoall": "#9467bd", "embedding_alltoall_fwd": "#d62728", "embedding_alltoall_bwd": "#ff9896",
    "dense_allreduce": "#ff7f0e", "host_to_device": "#8c564b", "host_staging": "#c49c94", "ingestion": "#7f7f7f",
}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def render(estimates: Sequence[dict[str, Any]], path: Path) -> None:
    """Draw `estimates` (documents of `hwspec.perf.estimate.estimate`, one workload) to `path` (.svg or
    .png), written atomically. Raises PlotUnavailable without matplotlib, ValueError for another suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: plot files end in .svg or .png")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("plotting needs matplotlib: pip install 'hwspec[plot]' (or pip install matplotlib)") from None
    import io

    from hwspec.atomic import write_atomic_bytes

    with matplotlib.rc_context({"svg.hashsalt": "hwspec", "svg.fonttype": "path", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(3.2 + 2.2 * len(estimates), 5.2))
        names = [e["platform"]["name"] for e in estimates]
        x = range(len(estimates))
        bottoms = [0.0] * len(estimates)
        for tid, label, _ in TERMS:
            heights = [next(t["seconds"] for t in e["terms"] if t["id"] == tid) * 1e3 for e in estimates]
            if not any(heights):
                continue
            ax.bar(x, heights, bottom=bottoms, width=0.55, label=label, color=COLORS[tid], edgecolor="white", linewidth=0.5)
            bottoms = [b + h for b, h in zip(bottoms, heights)]
        for i, e in enumerate(estimates):
            over = e["overlapped_seconds"] * 1e3
            ax.plot([i - 0.36, i + 0.36], [over, over], color="black", linewidth=2)
            ax.annotate(f"overlapped {over:.3g} ms\n{e['qps_overlapped'] / 1e6:.3g} M QPS\nbound: {e['bottleneck']['resource_name']}",
                        (i + 0.3, over), textcoords="offset points", xytext=(4, 2), fontsize=7.5, va="bottom")
            ax.annotate(f"serial {bottoms[i]:.3g} ms", (i, bottoms[i]), textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize=7.5)
        ax.set_xticks(list(x), names)
        ax.set_xlim(-0.6, len(estimates) - 0.4 + 0.6)
        ax.set_ylim(0, max(bottoms) * 1.18 if max(bottoms) > 0 else 1)
        ax.set_ylabel("ms per iteration (per GPU)")
        workload = estimates[0]["workload"]["name"]
        ax.set_title(f"{workload}: per-iteration time bounds by term\n(stack = serial sum; black bar = overlapped bound)", fontsize=9)
        ax.spines[["top", "right"]].set_visible(False)
        handles, labels = ax.get_legend_handles_labels()  # top of the stack first, as drawn
        ax.legend(handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7.5, frameon=False)
        fig.tight_layout()
        buffer = io.BytesIO()
        metadata = {"Date": None, "Creator": None} if suffix == ".svg" else {"Software": None}
        fig.savefig(buffer, format=suffix[1:], metadata=metadata, dpi=150, bbox_inches="tight")
        plt.close(fig)
    write_atomic_bytes(path, buffer.getvalue())
