"""Benchmark: the exact DP samplers, compiled (``native/src/dp_sampler.rs``) against the
NumPy path (``polars_ppdm.kernels.dp_noise``), the same bits (checked).

    python benchmarks/bench_dp_sampler.py              # 10 to 1,000,000 draws
    python benchmarks/bench_dp_sampler.py --repeats 5  # best of 5

Prints, per number of draws, the best time of each path and their ratio for the discrete
Gaussian (sigma 3) and the discrete Laplace (scale 3).  Needs the compiled kernels
(``make test`` or ``pip install ./native``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import machine  # benchmarks/ is the script's own folder

from polars_ppdm.kernels import _native
from polars_ppdm.kernels.dp_noise import discrete_gaussian, discrete_laplace
from polars_ppdm.kernels.prf import stream_id


def best(draw, keys: np.ndarray, repeats: int) -> tuple[float, np.ndarray]:
    draw(bytes(range(16)), stream_id("bench"), keys, 3.0)  # warm: the stream words' caches
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        out = draw(bytes(range(16)), stream_id("bench"), keys, 3.0)
        times.append(time.perf_counter() - started)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    compiled = _native.load()
    if compiled is None:
        msg = "the compiled kernels are not installed (make test, or pip install ./native)"
        raise SystemExit(msg)
    print(machine())
    for n in (10, 1_000, 100_000, 1_000_000):
        keys = np.arange(n, dtype=np.uint64)
        for name, draw in (("discrete_gaussian", discrete_gaussian), ("discrete_laplace", discrete_laplace)):
            _native.NATIVE = None
            pure, expected = best(draw, keys, args.repeats)
            _native.NATIVE = compiled
            fast, got = best(draw, keys, args.repeats)
            assert np.array_equal(got, expected), "the two paths drew different bits"
            print(
                f"{name:18s} {n:>9,} draws: NumPy {pure * 1e3:9.2f} ms, compiled {fast * 1e3:8.2f} ms, {pure / fast:5.1f}x"
            )


if __name__ == "__main__":
    main()
