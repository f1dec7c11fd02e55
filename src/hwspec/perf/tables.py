"""Numbers and tables for the performance reports people read (`hwspec roofline`, `estimate`,
`compare`): 4 significant digits, GB/s = 1e9 bytes/s, GiB = 1024^3 bytes, columns padded."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hwspec.text import significant


def number(value: float) -> str:
    """4 significant digits, integers above 1000 in full, no exponent: 31.51, 1555, 0.8."""
    return significant(value, 4)


def ms(seconds: float) -> str:
    """Seconds as milliseconds, `number`'s digits: 1.234."""
    return number(seconds * 1e3)


def gbps(value: float | None) -> str:
    return "-" if value is None else f"{number(value / 1e9)} GB/s"


def gib(value: int | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2)):
        if value >= scale:
            return f"{number(value / scale)} {unit}"
    return f"{value} B"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "", indent: str = "  ") -> list[str]:
    """Columns padded to their widest cell; `align` has one letter per column, "l" or "r"
    (default: first column left, the others right)."""
    rows = [list(header)] + [list(r) for r in rows]
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) if side == "l" else cell.rjust(width) for cell, width, side in zip(row, widths, align)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines
