"""Timing shared by the benchmark scripts."""

from __future__ import annotations

import time


def best_seconds(run, repeats: int) -> float:
    """The fastest of ``repeats`` wall-clock runs of ``run()``."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best
