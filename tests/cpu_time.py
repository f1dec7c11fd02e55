"""CPU time for the few tests that guard against a quadratic step or a runaway input.

The suite runs in parallel (pytest-xdist), so wall-clock time measures the other
workers as much as the code. These helpers take this process's CPU time (user +
system), the least of a few runs, after a collection: what the code itself costs.
Speed targets live in `benchmarks/`; these only catch growth that is clearly wrong.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def least_cpu_seconds(call: Callable[[], object], runs: int = 3) -> float:
    """The least CPU time (seconds, user + system of this process) of `runs` calls of `call`."""
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def grows_linearly(call_with: Callable[[int], object], small: int, large: int, slack: float = 0.25) -> bool:
    """Whether `call_with(large)` costs at most twice its linear share of `call_with(small)`.

    Linear growth from `small` to `large` multiplies the cost by large/small; a
    quadratic step multiplies it by its square. `slack` (CPU seconds) absorbs a
    fixed cost too small to measure as a ratio.
    """
    small_cost = least_cpu_seconds(lambda: call_with(small))
    large_cost = least_cpu_seconds(lambda: call_with(large))
    return large_cost < 2 * (large / small) * small_cost + slack
