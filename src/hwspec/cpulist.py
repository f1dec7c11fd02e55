"""Linux CPU lists, the text form of sysfs `cpulist`, numactl and `taskset -c`: `0-27,112-139`.

`format_cpu_list` and `parse_cpu_list` are inverses on sorted, distinct CPU numbers. Checking
hostile text (bounds, syntax) happens before parsing: in the spec (`spec_checks`) and in the
live-machine readers.
"""

from __future__ import annotations

from collections.abc import Iterable


def format_cpu_list(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 5, 7, 8) -> "0-2,5,7-8": sorted, each CPU once, runs as ranges ('' for none)."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{first}-{last}" if first != last else str(first) for first, last in ranges)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """`"0-3,8"` -> (0, 1, 2, 3, 8), for text already checked to be a CPU list."""
    cpus: list[int] = []
    for chunk in text.split(","):
        lo, _, hi = chunk.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(cpus)
